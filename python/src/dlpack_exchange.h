// The DLPack C structures this binding exchanges tensors with (DLPack 1.3, dlpack.h), written
// out here so that no framework is needed at build time. DLPackExchangeAPI is the C function
// table a framework publishes on its tensor type as `__dlpack_c_exchange_api__` (torch >= 2.10):
// it lets a consumer view a tensor and hand one back without the ~3 us Python round trip of
// `__dlpack__()` / `from_dlpack()`, and names the framework's current stream.
#pragma once
#include <cstdint>

namespace dsv4::py::dlpack {

enum DeviceType : int32_t { kCPU = 1, kCUDA = 2, kCUDAHost = 3 };
enum DataTypeCode : uint8_t { kInt = 0, kUInt = 1, kBool = 6 };

struct Device {
  int32_t device_type;
  int32_t device_id;
};
struct DataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct Tensor {  // DLTensor
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;
  int64_t* strides;  // elements; null: compact row-major
  uint64_t byte_offset;
};
struct Version {
  uint32_t major;
  uint32_t minor;
};
struct ManagedTensorVersioned {  // DLManagedTensorVersioned
  Version version;
  void* manager_ctx;
  void (*deleter)(ManagedTensorVersioned* self);
  uint64_t flags;
  Tensor dl_tensor;
};

struct ExchangeApiHeader {
  Version version;
  ExchangeApiHeader* prev_api;
};
struct ExchangeApi {  // DLPackExchangeAPI; every function returns 0, or -1 with a Python error set
  ExchangeApiHeader header;
  int (*managed_tensor_allocator)(Tensor* prototype, ManagedTensorVersioned** out, void* error_ctx,
                                  void (*set_error)(void* error_ctx, const char* kind, const char* message));
  int (*managed_tensor_from_py_object_no_sync)(void* py_object, ManagedTensorVersioned** out);
  int (*managed_tensor_to_py_object_no_sync)(ManagedTensorVersioned* tensor, void** out_py_object);
  int (*dltensor_from_py_object_no_sync)(void* py_object, Tensor* out);  // may be null
  int (*current_work_stream)(int32_t device_type, int32_t device_id, void** out_stream);
};

constexpr const char* kExchangeApiAttribute = "__dlpack_c_exchange_api__";
constexpr const char* kExchangeApiCapsule = "dlpack_exchange_api";

}  // namespace dsv4::py::dlpack
