#include "arrays.h"

#include <string>

namespace dsv4::py {
namespace {

std::string device_name(const dlpack::Device& d) {
  switch (d.device_type) {
    case dlpack::kCPU:
      return "cpu";
    case dlpack::kCUDAHost:
      return "cpu (pinned)";
    case dlpack::kCUDA:
      return "cuda:" + std::to_string(d.device_id);
    default:
      return "DLPack device type " + std::to_string(d.device_type);
  }
}

std::string dtype_name(const dlpack::DataType& t) {
  static const char* const names[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  std::string name = t.code < 7 ? names[t.code] : "type code " + std::to_string(t.code) + ", bits ";
  if (t.code != dlpack::kBool) name += std::to_string(t.bits);
  if (t.lanes != 1) name += "x" + std::to_string(t.lanes);
  return name;
}

bool host_memory(const dlpack::Device& d) {
  return d.device_type == dlpack::kCPU || d.device_type == dlpack::kCUDAHost;
}

template <class... Parts>
[[noreturn]] void fail_value(const Parts&... parts) {
  std::string message;
  ((message += parts), ...);
  throw nb::value_error(message.c_str());
}

template <class... Parts>
[[noreturn]] void fail_type(const Parts&... parts) {
  std::string message;
  ((message += parts), ...);
  throw nb::type_error(message.c_str());
}

std::string shape_text(const ArrayView& a) {
  std::string s = "(";
  for (int32_t i = 0; i < a.ndim && i < 2; ++i) s += (i ? ", " : "") + std::to_string(a.shape[i]);
  return s + (a.ndim == 1 ? ",)" : a.ndim > 2 ? ", ...)" : ")");
}

void check_rank(const ArrayView& a, int32_t ndim) {
  if (a.ndim != ndim) {
    fail_value(a.name, ": expected a ", std::to_string(ndim), "-D array, got ", std::to_string(a.ndim),
               "-D with shape ", shape_text(a));
  }
}

void check_int32(const ArrayView& a) {
  if (a.dtype.code != dlpack::kInt || a.dtype.bits != 32 || a.dtype.lanes != 1) {
    fail_type(a.name, ": expected dtype int32, got ", dtype_name(a.dtype));
  }
}

void check_vector(const ArrayView& a, int64_t expected_size, const char* expected) {
  check_rank(a, 1);
  if (a.shape[0] != expected_size) {
    fail_value(a.name, " has size ", std::to_string(a.shape[0]), ", expected ", expected, " = ",
               std::to_string(expected_size));
  }
  if (a.shape[0] > 1 && a.strides[0] != 1) {
    fail_value(a.name, ": elements must be adjacent (stride 1), got stride ", std::to_string(a.strides[0]),
               "; pass a contiguous array");
  }
}

int32_t to_int32(const ArrayView& a, int64_t n) {
  if (n > INT32_MAX) fail_value(a.name, ": shape ", shape_text(a), " does not fit int32");
  return static_cast<int32_t>(n);
}

}  // namespace

const dlpack::ExchangeApi* ArrayReader::exchange_api(nb::handle obj) {
  // A few types per process (torch.Tensor, nn.Parameter, numpy.ndarray): a linear cache.
  struct Entry {
    PyTypeObject* type;
    const dlpack::ExchangeApi* api;
  };
  static Entry cache[8];
  static size_t cached = 0;
  PyTypeObject* type = Py_TYPE(obj.ptr());
  for (size_t i = 0; i < cached; ++i) {
    if (cache[i].type == type) return cache[i].api;
  }
  const dlpack::ExchangeApi* api = nullptr;
  PyObject* capsule = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), dlpack::kExchangeApiAttribute);
  if (capsule == nullptr) {
    PyErr_Clear();
  } else {
    api = static_cast<const dlpack::ExchangeApi*>(PyCapsule_GetPointer(capsule, dlpack::kExchangeApiCapsule));
    if (api == nullptr) PyErr_Clear();
    Py_DECREF(capsule);
    // Only a 1.x table that can view tensors in place and make them is of use here.
    if (api != nullptr && (api->header.version.major != 1 || api->dltensor_from_py_object_no_sync == nullptr ||
                           api->managed_tensor_to_py_object_no_sync == nullptr)) {
      api = nullptr;
    }
  }
  if (cached < 8) {
    Py_INCREF(type);  // the cache keys on the type's address: keep it alive
    cache[cached++] = Entry{type, api};
  }
  return api;
}

ArrayView ArrayReader::view(nb::handle obj, const char* name, bool writable) {
  ArrayView a;
  a.name = name;
  // Only rank 1 and 2 are read; rank checks name the argument later.
  if (const dlpack::ExchangeApi* api = exchange_api(obj)) {
    dlpack::Tensor t{};
    if (api->dltensor_from_py_object_no_sync(obj.ptr(), &t) != 0) {
      nb::python_error error;  // takes the framework's exception
      fail_type(name, ": cannot be viewed through DLPack: ", error.what());
    }
    a.data = static_cast<char*>(t.data) + t.byte_offset;
    a.ndim = t.ndim;
    a.dtype = t.dtype;
    a.device = t.device;
    for (int32_t i = 0; i < a.ndim && i < 2; ++i) {  // null strides: compact row-major
      a.shape[i] = t.shape[i];
      a.strides[i] = t.strides != nullptr ? t.strides[i] : (i + 1 < a.ndim ? t.shape[i + 1] : 1);
    }
    return a;
  }
  nb::ndarray<nb::ro> array;
  nb::ndarray<> writable_array;  // nanobind refuses read-only arrays here
  if (writable && nb::try_cast(obj, writable_array, /*convert=*/false)) {
    array = nb::ndarray<nb::ro>(writable_array);
  } else if (!nb::try_cast(obj, array, /*convert=*/false)) {
    fail_type(name, ": expected an array (numpy, torch or any DLPack tensor), got ", nb::inst_name(obj).c_str());
  } else if (writable) {
    fail_value(name, ": read-only; pass a writable array");
  }
  if (kept_count_ == kept_.size()) fail_value(name, ": too many array arguments");
  a.data = const_cast<void*>(array.data());  // byte offset included
  a.ndim = static_cast<int32_t>(array.ndim());
  const nb::dlpack::dtype dt = array.dtype();
  a.dtype = dlpack::DataType{dt.code, dt.bits, dt.lanes};
  a.device = dlpack::Device{array.device_type(), array.device_id()};
  for (int32_t i = 0; i < a.ndim && i < 2; ++i) {  // nanobind always fills the strides
    a.shape[i] = static_cast<int64_t>(array.shape(static_cast<size_t>(i)));
    a.strides[i] = array.stride(static_cast<size_t>(i));
  }
  kept_[kept_count_++] = std::move(array);  // keeps the import alive for the call
  return a;
}

void check_device(const ArrayView& a, const Placement& place) {
  const bool same = place.cuda() ? a.device.device_type == dlpack::kCUDA && a.device.device_id == place.device.device_id
                                 : host_memory(a.device);
  if (!same) {
    fail_value(a.name, ": on ", device_name(a.device), ", but the step's tensors are on ", device_name(place.device),
               " (query_start_loc decides)");
  }
}

opt::Int32Matrix int32_matrix(const ArrayView& a, const Placement& place) {
  check_device(a, place);
  check_rank(a, 2);
  check_int32(a);
  const bool empty = a.shape[0] == 0 || a.shape[1] == 0;  // any strides: nothing is read
  if (!empty && a.shape[1] > 1 && a.strides[1] != 1) {
    fail_value(a.name, ": columns must be adjacent (column stride 1), got column stride ", std::to_string(a.strides[1]),
               "; pass a contiguous array");
  }
  if (!empty && a.shape[0] > 1 && a.strides[0] < 0) {
    fail_value(a.name, ": negative row stride ", std::to_string(a.strides[0]), " is not supported");
  }
  opt::Int32Matrix m;
  m.data = static_cast<const int32_t*>(a.data);
  m.rows = to_int32(a, a.shape[0]);
  m.cols = to_int32(a, a.shape[1]);
  m.row_stride = !empty && a.shape[0] > 1 ? a.strides[0] : a.shape[1];  // one row: its stride is never used
  return m;
}

const int32_t* int32_vector(const ArrayView& a, const Placement& place, int64_t expected_size, const char* expected) {
  check_device(a, place);
  check_int32(a);
  check_vector(a, expected_size, expected);
  return static_cast<const int32_t*>(a.data);
}

const int32_t* int32_dense(const ArrayView& a, const Placement& place) {
  const opt::Int32Matrix m = int32_matrix(a, place);
  if (m.rows > 1 && m.row_stride != m.cols) {
    fail_value(a.name, ": rows must be dense (row stride = columns), got row stride ", std::to_string(m.row_stride),
               " for ", std::to_string(m.cols), " columns; pass a contiguous array");
  }
  return m.data;
}

const uint8_t* bool_vector(const ArrayView& a, const Placement& place, int64_t expected_size, const char* expected) {
  check_device(a, place);
  if (!((a.dtype.code == dlpack::kBool || a.dtype.code == dlpack::kUInt) && a.dtype.bits == 8 && a.dtype.lanes == 1)) {
    fail_type(a.name, ": expected dtype bool or uint8, got ", dtype_name(a.dtype));
  }
  check_vector(a, expected_size, expected);
  return static_cast<const uint8_t*>(a.data);
}

const int32_t* host_int32_vector(const ArrayView& a, int64_t expected_size, const char* expected) {
  if (!host_memory(a.device)) {
    fail_value(a.name, ": must be in host memory (the host copy the step is validated on), got ",
               device_name(a.device));
  }
  check_int32(a);
  check_vector(a, expected_size, expected);
  return static_cast<const int32_t*>(a.data);
}

namespace {

// The out= arrays must be of the inputs' framework: the same exchange table (torch), or else
// an instance of query_start_loc's type (numpy).
nb::str qualified_name(PyTypeObject* type) {  // numpy.ndarray, torch.Tensor
  const nb::handle t(reinterpret_cast<PyObject*>(type));
  return nb::str("{}.{}").format(t.attr("__module__"), t.attr("__qualname__"));
}

void check_framework(nb::handle obj, const char* name, const Placement& place) {
  const bool same = place.api != nullptr ? ArrayReader::exchange_api(obj) == place.api
                                         : PyObject_TypeCheck(obj.ptr(), place.type) != 0;
  if (!same) {
    fail_type(name, ": a ", qualified_name(Py_TYPE(obj.ptr())).c_str(), ", but the inputs are ",
              qualified_name(place.type).c_str(),
              " (query_start_loc decides): pass arrays of the inputs' framework");
  }
}

ArrayView writable_int32(ArrayReader& reader, nb::handle obj, const char* name, const Placement& place,
                         int32_t ndim) {
  const ArrayView a = reader.view_writable(obj, name);
  check_framework(obj, name, place);
  check_device(a, place);
  check_int32(a);
  check_rank(a, ndim);
  return a;
}

bool aligned_to(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// Whether `count` int32 from `lens` share an element with the `rows` x `cols` rows, `stride`
// apart, from `base` (rows >= 1, stride >= cols): the interval meets the row it starts in, or
// reaches the next row's start.
bool overlaps(const int32_t* base, int64_t rows, int64_t cols, int64_t stride, const int32_t* lens, int64_t count) {
  const int64_t begin = (reinterpret_cast<intptr_t>(lens) - reinterpret_cast<intptr_t>(base)) / 4;
  const int64_t end = begin + count;  // elements, relative to base
  if (count == 0 || end <= 0 || begin >= (rows - 1) * stride + cols) return false;
  const int64_t row = begin < 0 ? -1 : begin / stride;
  if (row >= 0 && begin < row * stride + cols) return true;
  return row + 1 < rows && end > (row + 1) * stride;
}

}  // namespace

CallerOutputs caller_outputs(ArrayReader& reader, nb::handle out, const Placement& place, int32_t num_tokens,
                             int32_t window, int64_t width) {
  const bool pair = nb::isinstance<nb::tuple>(out) || nb::isinstance<nb::list>(out);
  if (!pair || nb::len(out) != 2) {
    fail_type("out: expected a pair (sparse_indices, sparse_lens) of arrays, got ",
              pair ? std::string("a ") + nb::inst_name(out).c_str() + " of " + std::to_string(nb::len(out))
                   : std::string(nb::inst_name(out).c_str()));
  }
  CallerOutputs c;
  c.sparse_indices = out[0];  // borrowed: the pair holds them for the call
  c.sparse_lens = out[1];
  const char* indices_name = "out[0] (sparse_indices)";
  const char* lens_name = "out[1] (sparse_lens)";
  const ArrayView indices = writable_int32(reader, c.sparse_indices, indices_name, place, 2);
  const int64_t rows = indices.shape[0], cols = indices.shape[1];
  if (rows < num_tokens) {
    fail_value(indices_name, " has ", std::to_string(rows), " rows, expected at least T = ",
               std::to_string(num_tokens));
  }
  if (cols < width) {
    fail_value(indices_name, " has ", std::to_string(cols), " columns, expected at least W + P = ",
               std::to_string(width));
  }
  c.row_capacity = to_int32(indices, rows);
  if (window >= 1) c.compressed_capacity = to_int32(indices, cols - window);  // >= P
  int64_t row_stride = (cols + 3) / 4 * 4;  // one row: its stride is never used
  if (rows > 0 && cols > 1 && indices.strides[1] != 1) {
    fail_value(indices_name, ": columns must be adjacent (column stride 1), got column stride ",
               std::to_string(indices.strides[1]), "; pass a contiguous array");
  }
  if (rows > 1) {
    row_stride = indices.strides[0];
    if (row_stride < cols) {
      fail_value(indices_name, ": row stride ", std::to_string(row_stride), " is below its ", std::to_string(cols),
                 " columns (rows overlap)");
    }
    if (row_stride % 4 != 0) {
      fail_value(indices_name, ": row stride ", std::to_string(row_stride),
                 " is not a multiple of 4 (rows must start 16-byte aligned, SPEC §7)");
    }
    if (row_stride > INT32_MAX) fail_value(indices_name, ": row stride ", std::to_string(row_stride), " exceeds int32");
  }
  if (rows > 0 && !aligned_to(indices.data, 16)) fail_value(indices_name, ": data is not 16-byte aligned (SPEC §7)");

  const ArrayView lens = writable_int32(reader, c.sparse_lens, lens_name, place, 1);
  if (lens.shape[0] != rows) {
    fail_value(lens_name, " has size ", std::to_string(lens.shape[0]), ", expected T_cap = ", std::to_string(rows),
               " (the rows of out[0])");
  }
  check_vector(lens, rows, "T_cap");
  if (rows > 0 && !aligned_to(lens.data, alignof(int32_t))) fail_value(lens_name, ": data is not 4-byte aligned");

  if (rows > 0 && lens.device.device_type == indices.device.device_type &&
      overlaps(static_cast<const int32_t*>(indices.data), rows, cols, row_stride,
               static_cast<const int32_t*>(lens.data), rows)) {
    fail_value(lens_name, " overlaps out[0] (sparse_indices)");
  }
  if (rows > 0) {  // nothing to write otherwise: T = 0, and an empty array may have no address
    c.view.sparse_indices = static_cast<int32_t*>(indices.data);
    c.view.row_stride = row_stride;
    c.view.sparse_lens = static_cast<int32_t*>(lens.data);
  }
  return c;
}

nb::object export_int32(const Placement& place, int32_t* data, int32_t ndim, const int64_t* shape,
                        std::shared_ptr<void> owner) {
  alignas(256) static int32_t empty_storage[64];  // an empty output has no memory of its own
  if (data == nullptr) data = empty_storage;
  if (place.api != nullptr) {
    // One heap block per array: the DLPack header, its shape and strides, and the owner.
    struct Exported {
      dlpack::ManagedTensorVersioned managed;
      int64_t shape[2];
      int64_t strides[2];
      std::shared_ptr<void> owner;
    };
    auto* e = new Exported{};
    e->owner = std::move(owner);
    e->shape[0] = shape[0];
    e->shape[1] = ndim == 2 ? shape[1] : 1;
    e->strides[0] = ndim == 2 ? shape[1] : 1;
    e->strides[1] = 1;
    dlpack::ManagedTensorVersioned& m = e->managed;
    m.version = dlpack::Version{1, 0};
    m.manager_ctx = e;
    // Called by the framework, from C: noexcept (the lease's end throws nothing, builder_pool.cpp).
    m.deleter = [](dlpack::ManagedTensorVersioned* self) noexcept { delete static_cast<Exported*>(self->manager_ctx); };
    m.flags = 0;
    m.dl_tensor =
        dlpack::Tensor{data, place.device, ndim, dlpack::DataType{dlpack::kInt, 32, 1}, e->shape, e->strides, 0};
    void* out = nullptr;
    // On failure the framework owns `m` (DLPack: ownership is stolen), so it is not freed here.
    if (place.api->managed_tensor_to_py_object_no_sync(&m, &out) != 0) throw nb::python_error();
    return nb::steal(static_cast<PyObject*>(out));
  }
  nb::capsule holder(new std::shared_ptr<void>(std::move(owner)),
                     [](void* p) noexcept { delete static_cast<std::shared_ptr<void>*>(p); });
  const size_t dims[2] = {static_cast<size_t>(shape[0]), ndim == 2 ? static_cast<size_t>(shape[1]) : 1};
  if (!place.cuda()) return nb::ndarray<nb::numpy, int32_t>(data, static_cast<size_t>(ndim), dims, holder).cast();
  // CUDA without a framework table: nanobind's own array, which any framework takes by DLPack.
  return nb::ndarray<int32_t>(data, static_cast<size_t>(ndim), dims, holder, nullptr, nb::dtype<int32_t>(),
                              nb::device::cuda::value, place.device.device_id)
      .cast();
}

void* call_stream(nb::handle stream, const Placement& place) {
  if (!place.cuda()) return nullptr;  // host builds have no stream
  if (stream.is_none()) {
    void* current = nullptr;
    if (place.api != nullptr && place.api->current_work_stream(dlpack::kCUDA, place.device.device_id, &current) != 0) {
      throw nb::python_error();
    }
    return current;  // no framework table: the legacy default stream
  }
  nb::handle value = stream;
  nb::object attribute;
  if (!PyLong_Check(stream.ptr()) && nb::hasattr(stream, "cuda_stream")) {  // a torch.cuda.Stream
    attribute = stream.attr("cuda_stream");
    value = attribute;
  }
  if (!PyLong_Check(value.ptr())) {
    fail_type(
        "stream: expected an int (a cudaStream_t, e.g. torch.cuda.current_stream().cuda_stream), "
        "an object with .cuda_stream, or None; got ",
        nb::inst_name(stream).c_str());
  }
  const unsigned long long address = PyLong_AsUnsignedLongLong(value.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    fail_value("stream: not a cudaStream_t address (a non-negative 64-bit int)");
  }
  return reinterpret_cast<void*>(static_cast<uintptr_t>(address));
}

}  // namespace dsv4::py
