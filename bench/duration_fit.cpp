// The calibration of the rest-of-layer stand-ins (gpu_timing.h): plain C++, so the GPU and
// CPU stand-ins share one fit and one measuring loop.
#include <algorithm>
#include <stdexcept>

#include "bench/gpu_timing.h"

namespace dsv4::bench {
namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

double DurationCalibration::request_for(double us) const {
  if (us <= 0) return 0;
  return std::max(0.0, (us - offset_us) / slope);
}

bool fit_duration_line(DurationCalibration& cal) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& p : cal.points) {
    if (p.requested_us < cal.fit_from_us) continue;
    n += 1;
    sx += p.requested_us;
    sy += p.measured_us;
    sxx += p.requested_us * p.requested_us;
    sxy += p.requested_us * p.measured_us;
  }
  cal.fit_points = static_cast<int>(n);
  cal.offset_us = 0.0;
  cal.slope = 1.0;
  cal.fit_plausible = true;
  const double den = n * sxx - sx * sx;
  if (n < 2 || den <= 0) return true;  // too few points: keep offset 0, slope 1
  const double slope = (n * sxy - sx * sy) / den;
  if (!(slope > 0.5 && slope < 2.0)) {
    cal.fit_plausible = false;
    return false;
  }
  cal.slope = slope;
  cal.offset_us = (sy - slope * sx) / n;
  return true;
}

DurationCalibration calibrate_durations(const std::vector<double>& requested_us, int samples,
                                        const std::function<double(double)>& measure_us) {
  if (requested_us.empty() || requested_us.front() != 0.0) {
    throw std::invalid_argument("calibrate_durations: the first request must be 0 (the floor)");
  }
  if (samples < 1) throw std::invalid_argument("calibrate_durations: samples < 1");
  DurationCalibration cal;
  cal.samples = samples;
  for (double requested : requested_us) {
    std::vector<double> measured;
    for (int i = 0; i < samples; ++i) measured.push_back(measure_us(requested));
    cal.points.push_back({requested, median_of(measured)});
  }
  cal.shortest_us = cal.points.front().measured_us;
  cal.fit_from_us = std::max(10.0, 1.25 * cal.shortest_us);
  fit_duration_line(cal);
  return cal;
}

const std::vector<double>& busy_wait_calibration_points() {
  static const std::vector<double> points = {0.0, 10.0, 50.0, 100.0, 500.0, 2000.0};
  return points;
}

const std::vector<double>& streaming_calibration_points() {
  static const std::vector<double> points = {0.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0};
  return points;
}

}  // namespace dsv4::bench
