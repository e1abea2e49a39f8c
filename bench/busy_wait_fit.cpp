#include "bench/gpu_timing.h"

namespace dsv4::bench {

bool fit_busy_wait_line(BusyWaitCalibration& cal) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& p : cal.points) {
    if (p.requested_us < 10.0) continue;
    n += 1;
    sx += p.requested_us;
    sy += p.measured_us;
    sxx += p.requested_us * p.requested_us;
    sxy += p.requested_us * p.measured_us;
  }
  const double den = n * sxx - sx * sx;
  if (den <= 0) return true;  // too few points: keep offset 0, slope 1
  const double slope = (n * sxy - sx * sy) / den;
  if (!(slope > 0.5 && slope < 2.0)) {
    cal.offset_us = 0.0;
    cal.slope = 1.0;
    return false;
  }
  cal.slope = slope;
  cal.offset_us = (sy - slope * sx) / n;
  return true;
}

}  // namespace dsv4::bench
