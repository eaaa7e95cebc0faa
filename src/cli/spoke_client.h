// Reads a spoke's counters from its metrics endpoint (geofs-spoked
// --metrics-port): GET http://ADDR/stats.json over libcurl.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "geofs/status.h"
#include "spoke/spoke_counters.h"

namespace geofs::cli {

// `address` is the metrics endpoint's "HOST:PORT". kUnavailable naming it
// when nothing answers there in `timeout` or it answers other than 200;
// kCorruption naming it when the reply is not a stats document.
Result<std::vector<spoke::SpokeCounters>> FetchSpokeCounters(const std::string& address,
                                                             std::chrono::milliseconds timeout);

}  // namespace geofs::cli
