// The one ratio -> kind mapping of the optimized path (SPEC §5).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "optimized/layer_kind.h"

namespace dsv4::opt {
namespace {

TEST(LayerKind, RatiosOfTheConfigs) {
  EXPECT_EQ(layer_kind_from_ratio(0), LayerKind::kSwaOnly);
  EXPECT_EQ(layer_kind_from_ratio(1), LayerKind::kSwaOnly);
  EXPECT_EQ(layer_kind_from_ratio(4), LayerKind::kC4A);
  EXPECT_EQ(layer_kind_from_ratio(128), LayerKind::kC128A);
}

TEST(LayerKind, AnyOtherRatioIsRejectedByName) {
  for (int32_t ratio : {-1, 2, 3, 5, 8, 64, 127, 129, 256}) {
    try {
      layer_kind_from_ratio(ratio);
      ADD_FAILURE() << "ratio " << ratio << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("compress_ratio = " + std::to_string(ratio)), std::string::npos)
          << e.what();
    }
  }
}

TEST(LayerKind, NamesAndCacheability) {
  EXPECT_STREQ(layer_kind_name(LayerKind::kSwaOnly), "SWA-only");
  EXPECT_STREQ(layer_kind_name(LayerKind::kC4A), "C4A");
  EXPECT_STREQ(layer_kind_name(LayerKind::kC128A), "C128A");
  EXPECT_TRUE(is_cacheable(LayerKind::kSwaOnly));
  EXPECT_TRUE(is_cacheable(LayerKind::kC128A));
  EXPECT_FALSE(is_cacheable(LayerKind::kC4A));
}

}  // namespace
}  // namespace dsv4::opt
