// How daemons stop: SIGINT and SIGTERM are blocked in every thread and
// taken by one sigwait, so shutdown runs on an ordinary thread, not in a
// signal handler.
#pragma once

#include <csignal>

namespace geofs {

// Blocks SIGINT and SIGTERM in the calling thread (and so in every thread it
// starts afterwards) and ignores SIGPIPE, so a client resetting its
// connection cannot kill the process on write. Call first thing in main().
sigset_t BlockStopSignals();

// Waits for one of the signals BlockStopSignals blocked; returns its number.
int WaitForStopSignal(const sigset_t& signals);

}  // namespace geofs
