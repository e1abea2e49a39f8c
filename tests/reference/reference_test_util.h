// Small helpers for the hand-worked reference tests: literal tensors and exact comparisons
// that print the first differing element.
#pragma once
#include <gtest/gtest.h>

#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference/mixed_sparse_indices.h"

namespace dsv4::ref::testing {

inline IndexVector vec(std::initializer_list<int32_t> values) {
  IndexVector v(static_cast<Eigen::Index>(values.size()));
  Eigen::Index i = 0;
  for (int32_t x : values) v(i++) = x;
  return v;
}

// rows x cols, filled row by row from `values` (which must hold rows * cols entries).
inline IndexMatrix mat(Eigen::Index rows, Eigen::Index cols, std::initializer_list<int32_t> values) {
  if (static_cast<Eigen::Index>(values.size()) != rows * cols) {
    throw std::logic_error("mat(): wrong number of literal values");
  }
  IndexMatrix m(rows, cols);
  Eigen::Index i = 0;
  for (int32_t x : values) {
    m(i / cols, i % cols) = x;
    ++i;
  }
  return m;
}

inline ::testing::AssertionResult same_matrix(const IndexMatrix& expected, const IndexMatrix& actual) {
  if (expected.rows() != actual.rows() || expected.cols() != actual.cols()) {
    return ::testing::AssertionFailure() << "shape: expected " << expected.rows() << "x"
                                         << expected.cols() << ", got " << actual.rows() << "x"
                                         << actual.cols();
  }
  for (Eigen::Index r = 0; r < expected.rows(); ++r) {
    for (Eigen::Index c = 0; c < expected.cols(); ++c) {
      if (expected(r, c) != actual(r, c)) {
        return ::testing::AssertionFailure() << "element (" << r << ", " << c << "): expected "
                                             << expected(r, c) << ", got " << actual(r, c)
                                             << "\nactual:\n" << actual;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult same_vector(const IndexVector& expected, const IndexVector& actual) {
  if (expected.size() != actual.size()) {
    return ::testing::AssertionFailure() << "size: expected " << expected.size() << ", got "
                                         << actual.size();
  }
  for (Eigen::Index i = 0; i < expected.size(); ++i) {
    if (expected(i) != actual(i)) {
      return ::testing::AssertionFailure() << "element " << i << ": expected " << expected(i)
                                           << ", got " << actual(i) << "\nactual: "
                                           << actual.transpose();
    }
  }
  return ::testing::AssertionSuccess();
}

// Runs `call`, expects std::invalid_argument, and checks that its message contains every
// one of `needles` (the field name, and the row and value where the error has them).
template <typename Call>
::testing::AssertionResult throws_naming(Call&& call, const std::vector<std::string>& needles) {
  try {
    call();
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    for (const std::string& needle : needles) {
      if (message.find(needle) == std::string::npos) {
        return ::testing::AssertionFailure() << "message \"" << message << "\" lacks \"" << needle
                                             << "\"";
      }
    }
    return ::testing::AssertionSuccess() << message;
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw something other than std::invalid_argument: "
                                         << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

}  // namespace dsv4::ref::testing
