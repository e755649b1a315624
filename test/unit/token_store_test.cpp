// The processes' store of a job with a token: LibTorch-facing client (runtime/src/comm/
// token_store.h) against the launcher's server (launcher/link/store_server.h), in one
// process over loopback, and the frames' seal on bytes alone (core/store_wire.h). The
// strangers (no proof, random bytes, a held-open TCPStore request) are in multinode.Strangers;
// a silent store and the server's room for unproven connections in token_store_limits_test.cpp.
#include <gtest/gtest.h>

#include <accelerate/core/error.h>

#include <chrono>
#include <string>
#include <thread>

#include "comm/token_store.h"
#include "core/store_wire.h"
#include "link/store_server.h"

namespace {

using accelerate::detail::TokenStore;
namespace wire = accelerate::detail::store_wire;
using std::chrono::milliseconds;

const std::string kKey(64, 'a');

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string text(const std::vector<uint8_t>& v) { return {v.begin(), v.end()}; }

struct Served {
  accelerate::launcher::StoreServer server{0, kKey, "token_store_test"};  // a free port, no race
  int port = server.port();
};

TEST(TokenStore, ServesTheOperationsGlooAndTheRuntimeUse) {
  Served s;
  TokenStore store("127.0.0.1", s.port, kKey, milliseconds(5000));
  store.set("a", bytes("1"));
  EXPECT_EQ(text(store.get("a")), "1");
  EXPECT_EQ(store.add("n", 5), 5);
  EXPECT_EQ(store.add("n", -2), 3);
  // compareSet as TCPStore: a missing key is set only when the expected value is empty.
  EXPECT_EQ(text(store.compareSet("c", bytes("x"), bytes("y"))), "x");
  EXPECT_FALSE(store.check({"c"}));
  EXPECT_EQ(text(store.compareSet("c", {}, bytes("y"))), "y");
  EXPECT_EQ(text(store.compareSet("c", bytes("z"), bytes("w"))), "y");
  EXPECT_EQ(text(store.compareSet("c", bytes("y"), bytes("w"))), "w");
  EXPECT_TRUE(store.check({"a", "n", "c"}));
  EXPECT_EQ(store.getNumKeys(), 3);
  EXPECT_TRUE(store.deleteKey("c"));
  EXPECT_FALSE(store.deleteKey("c"));
  EXPECT_EQ(store.getNumKeys(), 2);
  const std::vector<uint8_t> big(3 << 20, 7);  // larger than one read of either side
  store.set("big", big);
  EXPECT_EQ(store.get("big"), big);
}

TEST(TokenStore, AWaitEndsWhenAnotherProcessSetsTheKeyOrTimesOut) {
  Served s;
  TokenStore waiting("127.0.0.1", s.port, kKey, milliseconds(5000));
  TokenStore other("127.0.0.1", s.port, kKey, milliseconds(5000));
  std::thread setter([&] {
    std::this_thread::sleep_for(milliseconds(300));
    other.set("late", bytes("here"));
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(text(waiting.get("late")), "here");
  setter.join();
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(250));
  try {
    waiting.wait({"never"}, milliseconds(300));
    ADD_FAILURE() << "a wait for a key nobody sets returned";
  } catch (const accelerate::DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("Socket Timeout"), std::string::npos) << e.what();
  }
  waiting.set("after", bytes("ok"));  // the connection is still usable after a timeout
  EXPECT_EQ(text(other.get("after")), "ok");
}

TEST(TokenStore, AProcessWithAnotherKeyIsRefused) {
  Served s;
  try {
    TokenStore stranger("127.0.0.1", s.port, std::string(64, 'b'), milliseconds(3000));
    ADD_FAILURE() << "a client with another key was admitted";
  } catch (const accelerate::DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("refused this process's store key"), std::string::npos) << e.what();
  }
  TokenStore member("127.0.0.1", s.port, kKey, milliseconds(3000));  // the server serves on
  member.set("k", bytes("v"));
  EXPECT_EQ(text(member.get("k")), "v");
}

TEST(StoreWire, AFrameThatWasAlteredReplayedOrReorderedIsRefused) {
  wire::Sealer sealer("session", "c>s");
  const std::string first = sealer.seal({wire::kSet, {"key", "value"}});
  const std::string second = sealer.seal({wire::kGetNow, {"key"}});
  {
    wire::Unsealer u("session", "c>s");
    u.feed(first.data(), first.size());
    u.feed(second.data(), second.size());
    auto a = u.next(), b = u.next();
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->args[1], "value");
    EXPECT_EQ(b->code, wire::kGetNow);
  }
  std::string altered = first;
  altered[12] ^= 1;
  auto refused = [](const std::string& bytes, const std::string& direction) {
    wire::Unsealer u("session", direction);
    u.feed(bytes.data(), bytes.size());
    while (u.next()) {
    }
    return u.broken();
  };
  EXPECT_TRUE(refused(altered, "c>s"));
  EXPECT_TRUE(refused(second, "c>s"));         // out of order: its counter is 1
  EXPECT_TRUE(refused(first + first, "c>s"));  // replayed
  EXPECT_TRUE(refused(first, "s>c"));          // reflected back to its sender
  EXPECT_FALSE(refused(first + second, "c>s"));
  std::string huge = "\xff\xff\xff\xff";  // a 4 GB length: refused before any of it is kept
  EXPECT_TRUE(refused(huge, "c>s"));
}

TEST(StoreWire, TheHandshakeProvesTheKeyBothWays) {
  const std::string challenge(32, '1'), nonce(32, '2');
  const auto line = wire::proof_line(kKey, challenge, nonce);
  EXPECT_EQ(wire::check_proof(kKey, challenge, line).value_or(""), nonce);
  EXPECT_FALSE(wire::check_proof(std::string(64, 'b'), challenge, line));
  EXPECT_FALSE(wire::check_proof(kKey, std::string(32, '3'), line));  // another connection's challenge
  EXPECT_TRUE(wire::check_ok(kKey, nonce, wire::ok_line(kKey, nonce)));
  EXPECT_FALSE(wire::check_ok(kKey, std::string(32, '4'), wire::ok_line(kKey, nonce)));
  EXPECT_EQ(wire::parse_challenge(wire::challenge_line(challenge)).value_or(""), challenge);
  EXPECT_FALSE(wire::parse_challenge("accelerate-store 1 challenge=short"));
}

}  // namespace
