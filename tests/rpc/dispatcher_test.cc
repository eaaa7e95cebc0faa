#include "rpc/dispatcher.h"

#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "rpc/test_program.h"
#include "tools/rpc_client.h"
#include "xdr/xdr.h"

namespace geofs::rpc {
namespace {

using testing::EncodeCall;
using testing::ParseReply;
using testing::RpcAuth;
using testing::RpcCallSpec;
using testing::RpcReply;
using testing::TestProgram;

// A Program whose version range and answer the test chooses; procedure 1
// runs inline if `inline_proc1`.
class FixedProgram : public Program {
 public:
  FixedProgram(uint32_t number, uint32_t low, uint32_t high, Reply (*answer)(),
               bool inline_proc1 = false)
      : number_(number), low_(low), high_(high), answer_(answer), inline_proc1_(inline_proc1) {}
  uint32_t program() const override { return number_; }
  uint32_t min_version() const override { return low_; }
  uint32_t max_version() const override { return high_; }
  void Dispatch(const CallContext&, std::span<const uint8_t>, Responder respond) override {
    respond(answer_());
  }
  bool RunsInline(const CallContext& ctx) const override {
    return inline_proc1_ && ctx.procedure == 1;
  }

 private:
  uint32_t number_, low_, high_;
  Reply (*answer_)();
  bool inline_proc1_;
};

class DispatcherTest : public ::testing::Test {
 protected:
  DispatcherTest()
      : dispatcher_([this](Dispatcher::Task task) { tasks_.push_back(std::move(task)); }) {
    EXPECT_TRUE(dispatcher_.Register(program_).ok());
  }

  // Handles one record; returns how many sink calls happened before Handle
  // returned (0 or 1).
  size_t Handle(const RpcCallSpec& call) { return HandleRecord(EncodeCall(call)); }

  size_t HandleRecord(std::vector<uint8_t> bytes) {
    auto storage = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
    size_t before = replies_.size();
    dispatcher_.Handle(Record{storage, *storage}, peer_, [this](std::optional<OutgoingReply> r) {
      replies_.push_back(std::move(r));
    });
    return replies_.size() - before;
  }

  void RunTasks() {
    while (!tasks_.empty()) {
      Dispatcher::Task t = std::move(tasks_.front());
      tasks_.pop_front();
      t();
    }
  }

  RpcReply LastReply() {
    EXPECT_FALSE(replies_.empty());
    EXPECT_TRUE(replies_.back().has_value());
    std::vector<uint8_t> wire = replies_.back()->Flatten();
    uint32_t mark =
        (uint32_t{wire[0]} << 24) | (uint32_t{wire[1]} << 16) | (uint32_t{wire[2]} << 8) | wire[3];
    EXPECT_EQ(mark, 0x80000000u | (wire.size() - 4)) << "one fragment covering the reply";
    auto r = ParseReply(std::span<const uint8_t>(wire).subspan(4));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : RpcReply{};
  }

  static RpcCallSpec Call(uint32_t program, uint32_t version, uint32_t procedure) {
    RpcCallSpec c;
    c.xid = 99;
    c.program = program;
    c.version = version;
    c.procedure = procedure;
    return c;
  }

  std::shared_ptr<TestProgram> program_ = std::make_shared<TestProgram>();
  std::deque<Dispatcher::Task> tasks_;
  Dispatcher dispatcher_;
  PeerAddress peer_{true, {127, 0, 0, 1}, 812};
  std::vector<std::optional<OutgoingReply>> replies_;
};

TEST_F(DispatcherTest, RegistrationRules) {
  EXPECT_EQ(dispatcher_.Register(std::make_shared<TestProgram>()).code(),
            StatusCode::kAlreadyExists);
  auto empty_range = std::make_shared<FixedProgram>(7, 3, 2, [] { return Reply(); });
  EXPECT_EQ(dispatcher_.Register(empty_range).code(), StatusCode::kInvalidArgument);
}

TEST_F(DispatcherTest, UnknownProgramIsProgUnavailAtOnce) {
  for (uint32_t program : {100227u, 100003u, 0u, 0xffffffffu}) {
    ASSERT_EQ(Handle(Call(program, 3, 0)), 1u) << program;
    RpcReply r = LastReply();
    EXPECT_TRUE(r.accepted);
    EXPECT_EQ(r.xid, 99u);
    EXPECT_EQ(r.accept_stat, 1u) << program;
  }
  EXPECT_TRUE(tasks_.empty());
}

TEST_F(DispatcherTest, VersionOutsideTheRangeIsProgMismatchWithTheRange) {
  for (uint32_t version : {0u, 4u, 0xffffffffu}) {
    ASSERT_EQ(Handle(Call(TestProgram::kNumber, version, 0)), 1u);
    RpcReply r = LastReply();
    EXPECT_EQ(r.accept_stat, 2u);
    EXPECT_EQ(r.mismatch_low, TestProgram::kMinVersion);
    EXPECT_EQ(r.mismatch_high, TestProgram::kMaxVersion);
  }
  EXPECT_TRUE(tasks_.empty());
}

TEST_F(DispatcherTest, HeaderErrorsAreAnsweredWithoutTheProgram) {
  RpcCallSpec c = Call(TestProgram::kNumber, 1, 0);
  c.rpc_version = 1;
  ASSERT_EQ(Handle(c), 1u);
  EXPECT_FALSE(LastReply().accepted);
  EXPECT_EQ(LastReply().reject_stat, 0u);

  c = Call(TestProgram::kNumber, 1, 0);
  c.cred = RpcAuth::Sys(0, 0, std::vector<uint32_t>(17, 1));
  ASSERT_EQ(Handle(c), 1u);
  EXPECT_EQ(LastReply().reject_stat, 1u);
  EXPECT_EQ(LastReply().auth_stat, 1u);  // AUTH_BADCRED

  ASSERT_EQ(HandleRecord({0, 0, 0}), 1u);
  EXPECT_FALSE(replies_.back().has_value()) << "too short to answer: dropped";
  EXPECT_TRUE(tasks_.empty());
}

TEST_F(DispatcherTest, CallsRunOnTheExecutorWithTheirContext) {
  RpcCallSpec c = Call(TestProgram::kNumber, 2, TestProgram::kWhoAmI);
  c.cred = RpcAuth::Sys(1234, 56, std::vector<uint32_t>(16, 9));
  ASSERT_EQ(Handle(c), 0u);
  ASSERT_EQ(tasks_.size(), 1u);
  RunTasks();
  RpcReply r = LastReply();
  ASSERT_EQ(r.accept_stat, 0u);
  xdr::Decoder d(r.body);
  uint32_t flavor, uid, gid, ngids, port;
  ASSERT_TRUE(d.U32(&flavor) && d.U32(&uid) && d.U32(&gid) && d.U32(&ngids) && d.U32(&port));
  EXPECT_EQ(flavor, 1u);
  EXPECT_EQ(uid, 1234u);
  EXPECT_EQ(gid, 56u);
  EXPECT_EQ(ngids, 16u);
  EXPECT_EQ(port, 812u);
}

TEST_F(DispatcherTest, ArgumentsReachTheProgramAndTheBodyComesBack) {
  RpcCallSpec c = Call(TestProgram::kNumber, 1, TestProgram::kEcho);
  xdr::Encoder args;
  args.String("hello, world");
  c.args = args.Flatten();
  Handle(c);
  RunTasks();
  RpcReply r = LastReply();
  ASSERT_EQ(r.accept_stat, 0u);
  EXPECT_EQ(r.body, c.args);
}

TEST_F(DispatcherTest, ProgramErrorsPassThrough) {
  Handle(Call(TestProgram::kNumber, 1, 77));
  RpcCallSpec garbage = Call(TestProgram::kNumber, 1, TestProgram::kEcho);
  garbage.args = {0, 0, 0, 9, 1};  // says 9 bytes, has 1
  Handle(garbage);
  RunTasks();
  ASSERT_EQ(replies_.size(), 2u);
  std::vector<uint8_t> wire = replies_[0]->Flatten();
  EXPECT_EQ(ParseReply(std::span<const uint8_t>(wire).subspan(4))->accept_stat, 3u);
  EXPECT_EQ(LastReply().accept_stat, 4u);
}

TEST_F(DispatcherTest, CallsAProgramSaysAreCheapRunOnTheCallingThread) {
  auto quick = std::make_shared<FixedProgram>(
      502, 1, 1, [] { return Reply::Success(xdr::Encoder()); }, /*inline_proc1=*/true);
  ASSERT_TRUE(dispatcher_.Register(quick).ok());
  EXPECT_EQ(Handle(Call(502, 1, 1)), 1u) << "answered before Handle returned";
  EXPECT_TRUE(tasks_.empty());
  EXPECT_EQ(LastReply().accept_stat, 0u);
  EXPECT_EQ(Handle(Call(502, 1, 2)), 0u) << "other procedures still go to the executor";
  ASSERT_EQ(tasks_.size(), 1u);
  RunTasks();
  EXPECT_EQ(LastReply().accept_stat, 0u);
}

TEST_F(DispatcherTest, AProgramsAuthErrorIsDenied) {
  auto strict = std::make_shared<FixedProgram>(500, 1, 1,
                                               [] { return Reply::AuthError(AuthStat::kTooWeak); });
  ASSERT_TRUE(dispatcher_.Register(strict).ok());
  Handle(Call(500, 1, 1));
  RunTasks();
  RpcReply r = LastReply();
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(r.auth_stat, 5u);
}

TEST_F(DispatcherTest, AProgramsProgMismatchCarriesItsRange) {
  auto odd = std::make_shared<FixedProgram>(501, 2, 4,
                                            [] { return Reply::Error(AcceptStat::kProgMismatch); });
  ASSERT_TRUE(dispatcher_.Register(odd).ok());
  Handle(Call(501, 3, 0));
  RunTasks();
  RpcReply r = LastReply();
  EXPECT_EQ(r.accept_stat, 2u);
  EXPECT_EQ(r.mismatch_low, 2u);
  EXPECT_EQ(r.mismatch_high, 4u);
}

TEST_F(DispatcherTest, ALostResponderAnswersSystemErr) {
  Handle(Call(TestProgram::kNumber, 1, TestProgram::kLoseCall));
  EXPECT_TRUE(replies_.empty());
  RunTasks();
  ASSERT_EQ(replies_.size(), 1u);
  EXPECT_EQ(LastReply().accept_stat, 5u);
}

TEST_F(DispatcherTest, ADiscardedTaskAnswersSystemErr) {
  Handle(Call(TestProgram::kNumber, 1, TestProgram::kNull));
  ASSERT_EQ(tasks_.size(), 1u);
  tasks_.clear();  // an executor shutting down
  ASSERT_EQ(replies_.size(), 1u);
  EXPECT_EQ(LastReply().accept_stat, 5u);
}

TEST_F(DispatcherTest, ASecondAnswerIsIgnored) {
  class Twice : public FixedProgram {
   public:
    using FixedProgram::FixedProgram;
    void Dispatch(const CallContext& c, std::span<const uint8_t> a, Responder r) override {
      r(Reply::Error(AcceptStat::kProcUnavail));
      r(Reply());
    }
  };
  ASSERT_TRUE(
      dispatcher_.Register(std::make_shared<Twice>(503, 1, 1, [] { return Reply(); })).ok());
  Handle(Call(503, 1, 0));
  RunTasks();
  ASSERT_EQ(replies_.size(), 1u);
  EXPECT_EQ(LastReply().accept_stat, 3u);
}

}  // namespace
}  // namespace geofs::rpc
