// The address each process gives Gloo (runtime/src/comm/gloo_endpoint.h): the rules on given
// facts, and the facts this machine gives for loopback and its own interfaces.
#include "comm/gloo_endpoint.h"

#include <accelerate/core/error.h>

#include <gtest/gtest.h>

using accelerate::DistributedError;
using accelerate::detail::choose_gloo_endpoint;
using accelerate::detail::EndpointFacts;
using accelerate::detail::gather_endpoint_facts;
using accelerate::detail::interface_addresses;
using accelerate::detail::is_loopback_address;

namespace {

// A machine with loopback and one interface on the machines' network.
EndpointFacts machine(const std::string& master, std::vector<std::string> resolved) {
  EndpointFacts f;
  f.master_addr = master;
  f.master_resolved = std::move(resolved);
  f.interfaces = {
      {"lo", "127.0.0.1", true}, {"mnet0", "10.77.0.2", false}, {"lo", "::1", true}, {"mnet0", "fe80::1", false}};
  return f;
}

std::string error_of(const EndpointFacts& f) {
  try {
    choose_gloo_endpoint(f);
  } catch (const DistributedError& e) {
    return e.what();
  }
  return "";
}

TEST(GlooEndpoint, RouteToMasterAddress) {
  auto f = machine("10.77.0.1", {"10.77.0.1"});
  f.route_source = "10.77.0.2";
  f.spans_machines = true;
  const auto e = choose_gloo_endpoint(f);
  EXPECT_EQ(e.address, "10.77.0.2");
  EXPECT_TRUE(e.interfaces.empty());
  EXPECT_NE(e.reason.find("routes to MASTER_ADDR=10.77.0.1"), std::string::npos) << e.reason;
}

TEST(GlooEndpoint, LoopbackOnOneMachine) {
  auto f = machine("localhost", {"127.0.0.1", "::1"});
  f.route_source = "127.0.0.1";
  const auto e = choose_gloo_endpoint(f);
  EXPECT_EQ(e.address, "127.0.0.1");
  EXPECT_NE(e.reason.find("every process runs on this machine"), std::string::npos);
}

// Debian's "127.0.1.1 <hostname>": MASTER_ADDR=<hostname> is loopback on the main machine.
TEST(GlooEndpoint, LoopbackNameOnTheMainMachineOfSeveral) {
  auto f = machine("head", {"127.0.1.1"});
  f.route_source = "127.0.0.1";
  f.spans_machines = true;
  const auto e = choose_gloo_endpoint(f);
  EXPECT_EQ(e.address, "10.77.0.2");  // never fe80:: or ::1
  EXPECT_NE(e.reason.find("127.0.1.1"), std::string::npos) << e.reason;
  EXPECT_NE(e.reason.find("mnet0"), std::string::npos) << e.reason;
}

TEST(GlooEndpoint, SeveralCandidatesAskForAnInterface) {
  auto f = machine("head", {"127.0.1.1"});
  f.spans_machines = true;
  f.interfaces.push_back({"eth0", "192.168.1.7", false});
  const std::string error = error_of(f);
  EXPECT_NE(error.find("GLOO_SOCKET_IFNAME"), std::string::npos) << error;
  EXPECT_NE(error.find("eth0 (192.168.1.7)"), std::string::npos) << error;
  EXPECT_NE(error.find("mnet0 (10.77.0.2)"), std::string::npos) << error;
}

TEST(GlooEndpoint, NoOtherAddressAtAll) {
  auto f = machine("head", {"127.0.1.1"});
  f.spans_machines = true;
  f.interfaces = {{"lo", "127.0.0.1", true}};
  EXPECT_NE(error_of(f).find("no other address"), std::string::npos) << error_of(f);
}

TEST(GlooEndpoint, InterfacesFromGlooSocketIfname) {
  auto f = machine("10.77.0.1", {});
  f.socket_ifname = "mnet0,lo";
  const auto e = choose_gloo_endpoint(f);
  EXPECT_EQ(e.interfaces, (std::vector<std::string>{"mnet0", "lo"}));
  EXPECT_EQ(e.describe(), "mnet0,lo");
  EXPECT_EQ(e.reason, "GLOO_SOCKET_IFNAME=mnet0,lo");
}

TEST(GlooEndpoint, UnknownInterfaceListsTheOnesThereAre) {
  auto f = machine("10.77.0.1", {"10.77.0.1"});
  f.socket_ifname = "eth9";
  const std::string error = error_of(f);
  EXPECT_NE(error.find("'eth9'"), std::string::npos) << error;
  EXPECT_NE(error.find("mnet0 (10.77.0.2)"), std::string::npos) << error;
  EXPECT_EQ(error.find("fe80"), std::string::npos) << error;
}

TEST(GlooEndpoint, UnresolvableOrUnroutableMasterAddress) {
  auto f = machine("nowhere", {});
  f.resolve_error = "Name or service not known";
  EXPECT_NE(error_of(f).find("MASTER_ADDR=nowhere does not resolve"), std::string::npos) << error_of(f);
  auto g = machine("10.9.9.9", {"10.9.9.9"});
  g.route_error = "connect to 10.9.9.9: Network is unreachable";
  EXPECT_NE(error_of(g).find("no route to MASTER_ADDR=10.9.9.9"), std::string::npos) << error_of(g);
}

TEST(GlooEndpoint, LoopbackAddresses) {
  EXPECT_TRUE(is_loopback_address("127.0.0.1"));
  EXPECT_TRUE(is_loopback_address("127.0.1.1"));
  EXPECT_TRUE(is_loopback_address("::1"));
  EXPECT_FALSE(is_loopback_address("10.77.0.1"));
  EXPECT_FALSE(is_loopback_address("fe80::1"));
}

// The facts this machine gives: loopback resolves, routes to itself, and `lo` is listed.
TEST(GlooEndpoint, FactsOfThisMachine) {
  const auto f = gather_endpoint_facts("127.0.0.1", 29500, false, "");
  ASSERT_EQ(f.master_resolved, std::vector<std::string>{"127.0.0.1"});
  ASSERT_TRUE(f.route_source.has_value()) << f.route_error;
  EXPECT_EQ(*f.route_source, "127.0.0.1");
  EXPECT_EQ(choose_gloo_endpoint(f).address, "127.0.0.1");
  bool lo = false;
  for (const auto& a : interface_addresses()) lo |= a.interface == "lo" && a.address == "127.0.0.1" && a.loopback;
  EXPECT_TRUE(lo);
  const auto by_name = gather_endpoint_facts("127.0.0.1", 29500, true, "lo");
  EXPECT_EQ(choose_gloo_endpoint(by_name).interfaces, std::vector<std::string>{"lo"});
}

}  // namespace
