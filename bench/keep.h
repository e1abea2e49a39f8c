// DoNotOptimize on a mutable copy: Google Benchmark 1.8 deprecates the const-ref overload
// (an error under -Werror) that 1.7 picks for const values and temporaries.
#pragma once
#include <benchmark/benchmark.h>

namespace dsv4::bench {

template <class T>
inline void keep(T value) {
  benchmark::DoNotOptimize(value);
}

}  // namespace dsv4::bench
