// Ports for test daemons on 127.0.0.1.
#pragma once

#include <cstdint>

#include "geofs/status.h"

namespace geofs::testing {

// A TCP port on 127.0.0.1 that was free a moment ago, chosen at random below
// the kernel's ephemeral range (net.ipv4.ip_local_port_range). Ports there
// are never handed out by bind(0) or used as the source port of an outgoing
// connection, so a daemon that restarts on its port finds it still free
// unless another test picked the same one by chance.
Result<uint16_t> PickFreePort();

}  // namespace geofs::testing
