// Crash safety: a worker process changing the namespace is SIGKILLed at
// random moments; after each kill the namespace must be consistent and hold
// every change the worker saw acknowledged.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <set>
#include <string>

#include "meta/namespace.h"
#include "meta/rocks_kv_store.h"
#include "meta_test_util.h"

namespace geofs::meta {
namespace {

using testing::TempDir;

constexpr int kRounds = 6;
const vfs::Credentials kRoot{0, 0, {}};

// Runs the worker until it has acknowledged at least `min_acks` changes and
// then for `extra` more, SIGKILLs it, and returns every name it printed.
std::vector<std::string> RunAndKill(const std::string& dir, uint64_t seed, size_t min_acks,
                                    std::chrono::milliseconds extra) {
  const std::string worker = GEOFS_CRASH_WORKER;
  const std::string seed_arg = std::to_string(seed);
  char* const argv[] = {const_cast<char*>(worker.c_str()), const_cast<char*>(dir.c_str()),
                        const_cast<char*>(seed_arg.c_str()), nullptr};
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execv(argv[0], argv);
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string out;
  std::vector<std::string> names;
  auto drain = [&](int timeout_ms) {
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return false;
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) return false;
    out.append(buf, static_cast<size_t>(n));
    return true;
  };
  auto count_lines = [&] { return static_cast<size_t>(std::count(out.begin(), out.end(), '\n')); };
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (count_lines() < min_acks && std::chrono::steady_clock::now() < give_up) {
    if (!drain(100)) {
      int status;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        ADD_FAILURE() << "worker exited early, status " << status;
        ::close(fds[0]);
        return names;
      }
    }
  }
  EXPECT_GE(count_lines(), min_acks) << "worker made no progress";
  const auto kill_at = std::chrono::steady_clock::now() + extra;
  while (std::chrono::steady_clock::now() < kill_at) drain(5);
  ::kill(pid, SIGKILL);
  while (drain(1000)) {
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "worker ended otherwise, status " << status;
  // A line is acknowledged only once complete.
  size_t start = 0;
  for (size_t nl; (nl = out.find('\n', start)) != std::string::npos; start = nl + 1) {
    names.push_back(out.substr(start, nl - start));
  }
  return names;
}

TEST(NamespaceCrashTest, KilledAtRandomMomentsRecoversConsistent) {
  TempDir dir;
  std::mt19937_64 rng(std::random_device{}());
  std::set<std::string> acked;
  for (int round = 0; round < kRounds; ++round) {
    const uint64_t seed = rng();
    SCOPED_TRACE("round " + std::to_string(round) + ", seed " + std::to_string(seed));
    const auto extra = std::chrono::milliseconds(rng() % 300);
    for (std::string& name : RunAndKill(dir.path(), seed, 5, extra)) acked.insert(std::move(name));

    auto store = RocksKvStore::Open(dir.path());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto ns = Namespace::Open(store->get());
    ASSERT_TRUE(ns.ok()) << ns.status().ToString();
    auto problems = (*ns)->Fsck();
    ASSERT_TRUE(problems.ok()) << problems.status().ToString();
    std::string listing;
    for (const std::string& p : *problems) listing += p + "\n";
    EXPECT_TRUE(problems->empty()) << listing;
    auto ledger = (*ns)->Lookup(kRoot, (*ns)->RootHandle(), "ledger");
    ASSERT_TRUE(ledger.ok());
    for (const std::string& name : acked) {
      EXPECT_TRUE((*ns)->Lookup(kRoot, ledger->object.handle, name).ok())
          << "acknowledged " << name << " lost";
    }
  }
  EXPECT_GE(acked.size(), size_t{kRounds * 5});
}

}  // namespace
}  // namespace geofs::meta
