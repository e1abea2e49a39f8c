#include "harness/index_sources.h"

#include <map>

namespace dsv4::harness {

StepCase with_index_sources(StepCase c, const std::vector<int32_t>& sources) {
  c.layout.c4a_source.assign(static_cast<size_t>(c.schedule.num_layers()), -1);
  std::map<int32_t, size_t> first_layer;
  for (size_t l = 0; l < sources.size() && l < c.layout.c4a_source.size(); ++l) {
    if (sources[l] < 0 || ref::layer_kind_from_ratio(c.schedule.compress_ratios[l]) != ref::LayerKind::kC4A) continue;
    c.layout.c4a_source[l] = sources[l];
    const auto first = first_layer.emplace(sources[l], l);
    if (!first.second) c.c4a_per_layer[l] = c.c4a_per_layer[first.first->second];
  }
  return c;
}

rc::Gen<StepCase> gen_index_sources(StepCase c) {
  return rc::gen::exec([c] {
    const int32_t layers = c.schedule.num_layers();
    std::vector<int32_t> sources(static_cast<size_t>(layers), -1);
    const int style = *rc::gen::inRange(0, 4);  // 0 shrinks to "no sources"
    const int32_t run = *rc::gen::inRange(1, 5);
    const int32_t count = *rc::gen::inRange(1, 4);
    const int unsourced_percent = *rc::gen::element(0, 0, 20, 50);
    int32_t c4a_seen = 0;
    for (int32_t l = 0; l < layers; ++l) {
      if (ref::layer_kind_from_ratio(c.schedule.compress_ratios[static_cast<size_t>(l)]) != ref::LayerKind::kC4A) continue;
      int32_t source = -1;
      if (style == 1) source = 0;                                  // one indexer for every layer
      if (style == 2) source = c4a_seen / run;                     // consecutive runs
      if (style == 3) source = *rc::gen::inRange<int32_t>(0, count);  // interleaved
      if (style != 0 && *rc::gen::inRange(0, 100) < unsourced_percent) source = -1;
      sources[static_cast<size_t>(l)] = source;
      ++c4a_seen;
    }
    return with_index_sources(c, sources);
  });
}

}  // namespace dsv4::harness
