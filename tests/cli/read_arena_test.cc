#include "cli/read_arena.h"

#include <gtest/gtest.h>

#include <cstring>

namespace geofs::cli {
namespace {

// An arena over a block of 100 bytes.
class ReadArenaTest : public ::testing::Test {
 protected:
  ReadArenaTest() : block_(Buffer::Allocate(100, &data_)), arena_(block_, data_) {}

  // Reserves `capacity` bytes and reads `filled` copies of `c` into them.
  Buffer Read(size_t capacity, size_t filled, char c, uint8_t** at) {
    Buffer piece = arena_.Reserve(capacity, at);
    EXPECT_EQ(piece.data(), *at);
    EXPECT_EQ(piece.size(), capacity);
    std::memset(*at, c, filled);
    arena_.Filled(filled);
    return piece;
  }

  uint8_t* data_;
  Buffer block_;
  ReadArena arena_;
};

TEST_F(ReadArenaTest, ReadsTakeConsecutivePiecesOfTheBlock) {
  uint8_t* p;
  Buffer first = Read(40, 30, 'a', &p);
  EXPECT_EQ(p, data_);
  EXPECT_EQ(arena_.used(), 30u);  // the rest of the reservation is free again

  Buffer second = Read(70, 70, 'b', &p);  // exactly what is left
  EXPECT_EQ(p, data_ + 30);
  EXPECT_EQ(arena_.used(), 100u);
  EXPECT_EQ(first.span()[29], 'a');
  EXPECT_EQ(second.span()[0], 'b');
}

TEST_F(ReadArenaTest, AReadThatDoesNotFitGetsMemoryOfItsOwn) {
  uint8_t* p;
  Buffer first = Read(60, 60, 'a', &p);
  Buffer outside = Read(41, 41, 'x', &p);  // 40 left
  EXPECT_TRUE(p < data_ || p >= data_ + 100) << "inside the block";
  EXPECT_EQ(arena_.used(), 60u);  // the block's rest is untouched
  EXPECT_EQ(first.span()[59], 'a');

  // The next read that fits goes on where the block's pieces left off.
  Buffer next = Read(40, 40, 'c', &p);
  EXPECT_EQ(p, data_ + 60);
  EXPECT_EQ(outside.span()[40], 'x');
}

TEST(ReadArenaLifetimeTest, PiecesKeepTheBlockAlive) {
  uint8_t* data;
  Buffer piece;
  {
    Buffer block = Buffer::Allocate(64, &data);
    ReadArena arena(std::move(block), data);
    uint8_t* p;
    piece = arena.Reserve(16, &p);
    std::memset(p, 'z', 16);
    arena.Filled(16);
  }
  // The arena and the caller's handle are gone; the piece still reads.
  EXPECT_EQ(piece.span()[15], 'z');
}

}  // namespace
}  // namespace geofs::cli
