#include "geofs/status.h"

#include <cerrno>

#include <gtest/gtest.h>

#include "geofs/clock.h"

namespace geofs {
namespace {

Result<int> Half(int v) {
  if (v % 2) return Status::InvalidArgument("odd");
  return v / 2;
}

Result<int> Quarter(int v) {
  GEOFS_ASSIGN_OR_RETURN(int half, Half(v));
  return Half(half);
}

TEST(StatusTest, OkByDefaultAndNamedConstructorsCarryMessages) {
  EXPECT_TRUE(Status().ok());
  Status s = Status::NotFound("/a/b");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "not found: /a/b");
}

TEST(StatusTest, FromErrnoMapsCommonErrors) {
  EXPECT_EQ(Status::FromErrno(ENOENT, "x").code(), StatusCode::kNotFound);
  EXPECT_EQ(Status::FromErrno(ENOSPC, "x").code(), StatusCode::kNoSpace);
  EXPECT_EQ(Status::FromErrno(EIO, "x").code(), StatusCode::kIoError);
  EXPECT_TRUE(Status::FromErrno(0, "x").ok());
  EXPECT_NE(Status::FromErrno(EACCES, "file f").ToString().find("file f"), std::string::npos);
}

TEST(ResultTest, PropagatesValuesAndErrors) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().code(), StatusCode::kInvalidArgument);
  Result<int> from_ok_status = Status::Ok();
  EXPECT_FALSE(from_ok_status.ok());
  EXPECT_EQ(from_ok_status.status().code(), StatusCode::kInternal);
}

TEST(ManualClockTest, AdvancesBothClocks) {
  ManualClock clock({100, 999'999'999});
  auto t0 = clock.Now();
  clock.Advance(std::chrono::nanoseconds(2));
  EXPECT_EQ(clock.Now() - t0, std::chrono::nanoseconds(2));
  EXPECT_EQ(clock.WallNow(), (WallTime{101, 1}));
}

}  // namespace
}  // namespace geofs
