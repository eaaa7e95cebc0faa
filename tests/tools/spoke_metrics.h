// Reads a geofs-spoked's Prometheus endpoint (--metrics-port), for tests
// that watch its counters (e.g. wait until its write journal drained).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "geofs/status.h"

namespace geofs::testing {

// GET /metrics from 127.0.0.1:port: each metric's value by name, labels
// dropped (a metric with several labelled samples keeps the last one).
Result<std::map<std::string, double>> FetchSpokeMetrics(uint16_t port);

}  // namespace geofs::testing
