# cmake -DDIR=<bench_inputs --out> -P check_inputs.cmake: the files the bench-smoke filter's
# configs must have produced (two kernel configs and one step of three kinds).
set(dsv4_build_files meta.json decode_swa_indices.npy prefill_topk.npy query_start_loc.npy
    seq_lens.npy token_to_req.npy swa_block_table.npy ref_sparse_indices.npy ref_sparse_lens.npy)
set(dsv4_expected)
foreach(config flash_SWA-only_decode64_ctx8K pro_C4A_decode64_ctx8K step_flash_decode64_ctx8K/SWA-only
        step_flash_decode64_ctx8K/C4A step_flash_decode64_ctx8K/C128A)
  foreach(f ${dsv4_build_files})
    list(APPEND dsv4_expected ${config}/${f})
  endforeach()
endforeach()
# The optional inputs of the local (C4A) and global (C128A) decode forms.
list(APPEND dsv4_expected step_flash_decode64_ctx8K/step.json
     pro_C4A_decode64_ctx8K/decode_compressed.npy pro_C4A_decode64_ctx8K/decode_valid.npy
     pro_C4A_decode64_ctx8K/compressed_block_table.npy
     step_flash_decode64_ctx8K/C128A/decode_compressed_lens.npy)
foreach(f ${dsv4_expected})
  if(NOT EXISTS "${DIR}/${f}")
    message(FATAL_ERROR "bench_inputs did not write ${DIR}/${f}")
  endif()
endforeach()
list(LENGTH dsv4_expected n)
message(STATUS "bench_inputs wrote all ${n} expected files in ${DIR}")
