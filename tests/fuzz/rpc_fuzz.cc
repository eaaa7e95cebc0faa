// Arbitrary bytes through record reassembly, call-header parsing and
// dispatch (to an echo program and PORTMAP), checking every reply's framing.
//
// Input: byte 0 chooses how the rest is delivered: bit 0 set frames the rest
// as one record (so the fuzzer reaches the header parser without learning
// record marks); bits 1-3 pick the read size; bits 4-7 the most records taken
// per pass. Everything else is the byte stream (or record body).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "common/logging.h"
#include "portmap/portmap_program.h"
#include "rpc/dispatcher.h"
#include "rpc/record.h"
#include "xdr/xdr.h"

namespace geofs::rpc {
namespace {

// Echoes an opaque (by reference into the call's record), adds up a list of
// words, or loses its call; other procedures are unavailable.
class FuzzProgram : public Program {
 public:
  uint32_t program() const override { return 400000; }
  uint32_t min_version() const override { return 1; }
  uint32_t max_version() const override { return 3; }
  void Dispatch(const CallContext& ctx, std::span<const uint8_t> args, Responder respond) override {
    xdr::Decoder d(args);
    xdr::Encoder out;
    switch (ctx.procedure) {
      case 0:
        return respond(Reply::Success(std::move(out)));
      case 1: {
        std::span<const uint8_t> payload;
        if (!d.Opaque(1 << 20, &payload)) return respond(Reply::Error(AcceptStat::kGarbageArgs));
        out.OpaqueRef(Buffer(ctx.record, payload.data(), payload.size()));
        return respond(Reply::Success(std::move(out)));
      }
      case 2: {
        uint32_t count = 0;
        uint64_t sum = 0;
        if (!d.U32(&count) || count > 1024) return respond(Reply::Error(AcceptStat::kGarbageArgs));
        for (uint32_t i = 0, v = 0; i < count; ++i) sum += d.U32(&v) ? v : 0;
        if (!d.ok()) return respond(Reply::Error(AcceptStat::kGarbageArgs));
        out.U64(sum);
        return respond(Reply::Success(std::move(out)));
      }
      case 3:
        return;  // the Responder's destructor answers SYSTEM_ERR
      default:
        return respond(Reply::Error(AcceptStat::kProcUnavail));
    }
  }
};

void Check(bool ok) {
  if (!ok) abort();
}

// Every reply must be one fragment covering exactly the reply, for the xid
// of the record that caused it.
void CheckReply(const OutgoingReply& reply, std::span<const uint8_t> record) {
  std::vector<uint8_t> wire = reply.Flatten();
  Check(wire.size() >= 4 + 12);
  uint32_t mark =
      (uint32_t{wire[0]} << 24) | (uint32_t{wire[1]} << 16) | (uint32_t{wire[2]} << 8) | wire[3];
  Check(mark == (kLastFragmentFlag | (wire.size() - 4)));
  Check(record.size() >= 4 && std::memcmp(wire.data() + 4, record.data(), 4) == 0);
}

struct Harness {
  Harness() : dispatcher([](Dispatcher::Task task) { task(); }) {
    SetLogLevel("off");
    Check(dispatcher.Register(std::make_shared<FuzzProgram>()).ok());
    Check(dispatcher
              .Register(std::make_shared<portmap::PortmapProgram>(
                  std::vector<portmap::Mapping>{{100003, 3, portmap::kProtocolTcp, 2049},
                                                {100005, 3, portmap::kProtocolTcp, 20048}}))
              .ok());
  }
  Dispatcher dispatcher;
};

}  // namespace
}  // namespace geofs::rpc

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace geofs::rpc;
  static Harness* harness = new Harness();
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::span<const uint8_t> input(data + 1, size - 1);

  std::vector<uint8_t> stream;
  if (mode & 1) {
    if (input.size() > kMaxFragmentBytes) return 0;
    auto mark = SingleFragmentMark(static_cast<uint32_t>(input.size()));
    stream.assign(mark.begin(), mark.end());
  }
  stream.insert(stream.end(), input.begin(), input.end());

  static constexpr size_t kReadSizes[8] = {1, 3, 7, 64, 300, 4096, 65536, SIZE_MAX};
  const size_t read_size = kReadSizes[(mode >> 1) & 7];
  const size_t max_records = (mode >> 4) + 1;

  // Small limits so that the fuzzer reaches them: a 64 KiB record maximum and
  // a 256-byte staging buffer (fragments of 128+ bytes are read in place).
  RecordReader reader(64 << 10, 256);
  PeerAddress peer{true, {127, 0, 0, 1}, 700};
  std::vector<Record> records;
  size_t pos = 0;
  while (true) {
    records.clear();
    geofs::Status s = reader.Take(max_records, &records);
    for (Record& record : records) {
      Check(record.bytes.size() <= (64 << 10));
      std::span<const uint8_t> bytes = record.bytes;
      size_t answers = 0;
      harness->dispatcher.Handle(std::move(record), peer, [&](std::optional<OutgoingReply> reply) {
        ++answers;
        if (reply) CheckReply(*reply, bytes);
      });
      Check(answers == 1);  // the executor is inline: every call is answered at once
    }
    if (!s.ok()) break;                           // oversize: the connection would close
    if (records.size() == max_records) continue;  // more may be staged
    if (pos == stream.size()) break;
    std::span<uint8_t> target = reader.ReadTarget();
    Check(!target.empty());
    size_t n = std::min({target.size(), stream.size() - pos, read_size});
    std::memcpy(target.data(), stream.data() + pos, n);
    reader.Commit(n);
    pos += n;
  }
  return 0;
}
