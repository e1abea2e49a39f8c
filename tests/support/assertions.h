// Plain GoogleTest assertions: exact tensor equality that prints the first differing element,
// and exceptions whose message names what it must.
#pragma once
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "reference/tensors.h"

namespace dsv4::testing {

template <class Tensor>
::testing::AssertionResult same_tensor(const Tensor& expected, const Tensor& actual) {
  if (expected.rows() != actual.rows() || expected.cols() != actual.cols()) {
    return ::testing::AssertionFailure() << "shape: expected " << expected.rows() << "x" << expected.cols()
                                         << ", got " << actual.rows() << "x" << actual.cols();
  }
  for (Eigen::Index r = 0; r < expected.rows(); ++r) {
    for (Eigen::Index c = 0; c < expected.cols(); ++c) {
      if (expected(r, c) != actual(r, c)) {
        return ::testing::AssertionFailure() << "element (" << r << ", " << c << "): expected " << expected(r, c)
                                             << ", got " << actual(r, c) << "\nactual:\n" << actual;
      }
    }
  }
  return ::testing::AssertionSuccess();
}
inline ::testing::AssertionResult same_matrix(const ref::IndexMatrix& e, const ref::IndexMatrix& a) {
  return same_tensor(e, a);
}
inline ::testing::AssertionResult same_vector(const ref::IndexVector& e, const ref::IndexVector& a) {
  return same_tensor(e, a);
}

// `call` throws std::invalid_argument whose message contains every one of `needles` (the
// field, and the row and value where the error has them).
template <class Call>
::testing::AssertionResult throws_naming(Call&& call, const std::vector<std::string>& needles) {
  try {
    call();
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    for (const std::string& needle : needles) {
      if (message.find(needle) == std::string::npos) {
        return ::testing::AssertionFailure() << "message \"" << message << "\" lacks \"" << needle << "\"";
      }
    }
    return ::testing::AssertionSuccess() << message;
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw something other than std::invalid_argument: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

}  // namespace dsv4::testing
