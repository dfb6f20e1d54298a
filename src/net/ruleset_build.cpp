// The build-time side of filtered.hpp: the route and nftables messages made
// with libmnl and libnftnl. Only tools/nft_gen.cpp and the tests link this;
// libchock carries the bytes it produced.
#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "net/filtered.hpp"

namespace chock::net {

namespace {

constexpr std::uint32_t kLoopbackIndex = 1;  // lo is the first device of every namespace

struct RuleDeleter {
  void operator()(nftnl_rule* r) const { nftnl_rule_free(r); }
};
using RulePtr = std::unique_ptr<nftnl_rule, RuleDeleter>;

// One rule under construction: expressions appended in order.
class RuleBuilder {
 public:
  explicit RuleBuilder(const char* chain) : rule_(nftnl_rule_alloc()) {
    if (!rule_) throw std::bad_alloc();
    nftnl_rule_set_str(rule_.get(), NFTNL_RULE_TABLE, kRulesetTable);
    nftnl_rule_set_str(rule_.get(), NFTNL_RULE_CHAIN, chain);
    nftnl_rule_set_u32(rule_.get(), NFTNL_RULE_FAMILY, NFPROTO_INET);
  }
  RuleBuilder& meta(std::uint32_t key) {
    nftnl_expr* e = expr("meta");
    nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
    nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, NFT_REG_1);
    return add(e);
  }
  RuleBuilder& payload(std::uint32_t base, std::uint32_t offset, std::uint32_t len) {
    nftnl_expr* e = expr("payload");
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, offset);
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
    return add(e);
  }
  RuleBuilder& ct(std::uint32_t key) {
    nftnl_expr* e = expr("ct");
    nftnl_expr_set_u32(e, NFTNL_EXPR_CT_KEY, key);
    nftnl_expr_set_u32(e, NFTNL_EXPR_CT_DREG, NFT_REG_1);
    return add(e);
  }
  RuleBuilder& mask(const void* bits, std::uint32_t len) {
    nftnl_expr* e = expr("bitwise");
    nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
    nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
    nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, len);
    nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, bits, len);
    const std::uint8_t zero[16] = {};
    nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, zero, len);
    return add(e);
  }
  RuleBuilder& cmp(std::uint32_t op, const void* data, std::uint32_t len) {
    nftnl_expr* e = expr("cmp");
    nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
    nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, op);
    nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
    return add(e);
  }
  RuleBuilder& eq8(std::uint8_t v) { return cmp(NFT_CMP_EQ, &v, 1); }
  RuleBuilder& eq16be(std::uint16_t v) {
    const std::uint16_t be = htons(v);
    return cmp(NFT_CMP_EQ, &be, 2);
  }
  RuleBuilder& family(std::uint8_t nfproto) { return meta(NFT_META_NFPROTO).eq8(nfproto); }
  RuleBuilder& l4(std::uint8_t proto) { return meta(NFT_META_L4PROTO).eq8(proto); }
  // The destination address within base/prefix.
  RuleBuilder& ip4_daddr_in(const std::uint8_t base[4], unsigned prefix) {
    payload(NFT_PAYLOAD_NETWORK_HEADER, offsetof(iphdr, daddr), 4);
    return masked(base, prefix, 4);
  }
  RuleBuilder& ip6_daddr_in(const std::uint8_t base[16], unsigned prefix) {
    payload(NFT_PAYLOAD_NETWORK_HEADER, offsetof(ip6_hdr, ip6_dst), 16);
    return masked(base, prefix, 16);
  }
  RuleBuilder& dport(std::uint16_t port) {  // TCP and UDP keep it at the same offset
    payload(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2);
    return eq16be(port);
  }
  RuleBuilder& ct_bits(std::uint32_t key, std::uint32_t bits) {
    ct(key);
    mask(&bits, 4);
    const std::uint32_t zero = 0;
    return cmp(NFT_CMP_NEQ, &zero, 4);
  }
  RuleBuilder& verdict(std::uint32_t v) {
    nftnl_expr* e = expr("immediate");
    nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
    nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, v);
    return add(e);
  }
  RuleBuilder& redirect(std::uint16_t port) {
    nftnl_expr* imm = expr("immediate");
    const std::uint16_t be = htons(port);
    nftnl_expr_set_u32(imm, NFTNL_EXPR_IMM_DREG, NFT_REG_1);
    nftnl_expr_set(imm, NFTNL_EXPR_IMM_DATA, &be, sizeof be);
    add(imm);
    nftnl_expr* e = expr("redir");
    nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_REG_PROTO_MIN, NFT_REG_1);
    return add(e);
  }
  RuleBuilder& reject(std::uint32_t type, std::uint8_t code) {
    nftnl_expr* e = expr("reject");
    nftnl_expr_set_u32(e, NFTNL_EXPR_REJECT_TYPE, type);
    nftnl_expr_set_u8(e, NFTNL_EXPR_REJECT_CODE, code);
    return add(e);
  }
  RulePtr take() { return std::move(rule_); }

 private:
  static nftnl_expr* expr(const char* name) {
    nftnl_expr* e = nftnl_expr_alloc(name);
    if (e == nullptr) throw std::bad_alloc();
    return e;
  }
  RuleBuilder& add(nftnl_expr* e) {
    nftnl_rule_add_expr(rule_.get(), e);
    return *this;
  }
  RuleBuilder& masked(const std::uint8_t* base, unsigned prefix, std::uint32_t len) {
    std::uint8_t bits[16] = {};
    for (unsigned i = 0; i < prefix; ++i)
      bits[i / 8] = static_cast<std::uint8_t>(bits[i / 8] | (0x80 >> (i % 8)));
    mask(bits, len);
    return cmp(NFT_CMP_EQ, base, len);
  }
  RulePtr rule_;
};

class Batch {
 public:
  Batch() : buffer_(1 << 16), batch_(mnl_nlmsg_batch_start(buffer_.data(), buffer_.size())) {
    nftnl_batch_begin(static_cast<char*>(mnl_nlmsg_batch_current(batch_)), seq_++);
    mnl_nlmsg_batch_next(batch_);
  }
  ~Batch() { mnl_nlmsg_batch_stop(batch_); }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  void table() {
    nftnl_table* t = nftnl_table_alloc();
    nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, NFPROTO_INET);
    nftnl_table_set_str(t, NFTNL_TABLE_NAME, kRulesetTable);
    nlmsghdr* h = nftnl_table_nlmsg_build_hdr(current(), NFT_MSG_NEWTABLE, NFPROTO_INET,
                                              NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK, seq_++);
    nftnl_table_nlmsg_build_payload(h, t);
    nftnl_table_free(t);
    next();
  }
  void chain(const char* name, const char* type, std::int32_t priority) {
    nftnl_chain* c = nftnl_chain_alloc();
    nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, kRulesetTable);
    nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name);
    nftnl_chain_set_u32(c, NFTNL_CHAIN_FAMILY, NFPROTO_INET);
    nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, NF_INET_LOCAL_OUT);
    nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, priority);
    nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, type);
    nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, NF_ACCEPT);
    nlmsghdr* h = nftnl_chain_nlmsg_build_hdr(current(), NFT_MSG_NEWCHAIN, NFPROTO_INET,
                                              NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK, seq_++);
    nftnl_chain_nlmsg_build_payload(h, c);
    nftnl_chain_free(c);
    next();
  }
  void rule(RuleBuilder& b) {
    RulePtr r = b.take();
    nlmsghdr* h = nftnl_rule_nlmsg_build_hdr(current(), NFT_MSG_NEWRULE, NFPROTO_INET,
                                             NLM_F_APPEND | NLM_F_CREATE | NLM_F_ACK, seq_++);
    nftnl_rule_nlmsg_build_payload(h, r.get());
    next();
  }
  NetlinkBatch finish() {
    nftnl_batch_end(current(), seq_++);
    mnl_nlmsg_batch_next(batch_);
    NetlinkBatch out;
    const auto* head = static_cast<const std::uint8_t*>(mnl_nlmsg_batch_head(batch_));
    out.bytes.assign(head, head + mnl_nlmsg_batch_size(batch_));
    out.acks = acks_;
    return out;
  }

 private:
  char* current() { return static_cast<char*>(mnl_nlmsg_batch_current(batch_)); }
  void next() {
    ++acks_;
    if (!mnl_nlmsg_batch_next(batch_)) throw std::length_error("nftables batch buffer full");
  }
  std::vector<char> buffer_;
  mnl_nlmsg_batch* batch_;
  std::uint32_t seq_ = 1;
  int acks_ = 0;
};

void put_route(std::vector<std::uint8_t>& out, int family, const std::uint8_t* base, unsigned prefix,
               std::uint32_t seq) {
  std::uint8_t buf[256] = {};
  nlmsghdr* h = mnl_nlmsg_put_header(buf);
  h->nlmsg_type = RTM_NEWROUTE;
  h->nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
  h->nlmsg_seq = seq;
  auto* rt = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(h, sizeof(rtmsg)));
  rt->rtm_family = static_cast<std::uint8_t>(family);
  rt->rtm_dst_len = static_cast<std::uint8_t>(prefix);
  rt->rtm_table = RT_TABLE_LOCAL;
  rt->rtm_protocol = RTPROT_STATIC;
  rt->rtm_scope = RT_SCOPE_HOST;
  rt->rtm_type = RTN_LOCAL;  // delivered here, where the nat hook hands it to the relay
  mnl_attr_put(h, RTA_DST, family == AF_INET ? 4 : 16, base);
  mnl_attr_put_u32(h, RTA_OIF, kLoopbackIndex);
  out.insert(out.end(), buf, buf + h->nlmsg_len);
}

}  // namespace

NetlinkBatch build_route_messages() {
  NetlinkBatch out;
  put_route(out.bytes, AF_INET, kSyntheticV4Base, kSyntheticV4Prefix, 1);
  put_route(out.bytes, AF_INET6, kSyntheticV6Base, kSyntheticV6Prefix, 2);
  out.acks = 2;
  return out;
}

NetlinkBatch build_ruleset_messages() {
  Batch batch;
  batch.table();
  batch.chain("redirect", "nat", -100);
  batch.chain("output", "filter", 0);
  {
    RuleBuilder r("redirect");
    r.family(NFPROTO_IPV4)
        .ip4_daddr_in(kSyntheticV4Base, kSyntheticV4Prefix)
        .l4(IPPROTO_TCP)
        .redirect(kRelayPort);
    batch.rule(r);
  }
  {
    RuleBuilder r("redirect");
    r.family(NFPROTO_IPV6)
        .ip6_daddr_in(kSyntheticV6Base, kSyntheticV6Prefix)
        .l4(IPPROTO_TCP)
        .redirect(kRelayPort);
    batch.rule(r);
  }
  const std::uint32_t going = NF_CT_STATE_BIT(IP_CT_ESTABLISHED) | NF_CT_STATE_BIT(IP_CT_RELATED);
  {
    RuleBuilder r("output");  // replies, the relay's own half of a link included
    r.ct_bits(NFT_CT_STATE, going).verdict(NF_ACCEPT);
    batch.rule(r);
  }
  {
    RuleBuilder r("output");  // into the relay, only by the redirect
    r.l4(IPPROTO_TCP).dport(kRelayPort).ct_bits(NFT_CT_STATUS, IPS_DST_NAT).verdict(NF_ACCEPT);
    batch.rule(r);
  }
  {
    RuleBuilder r("output");  // a direct connect to the relay's port
    r.l4(IPPROTO_TCP).dport(kRelayPort).reject(NFT_REJECT_TCP_RST, 0);
    batch.rule(r);
  }
  {
    RuleBuilder r("output");  // the stub
    const std::uint8_t* stub = kStubAddress;
    r.family(NFPROTO_IPV4).ip4_daddr_in(stub, 32).l4(IPPROTO_UDP).dport(kStubPort).verdict(NF_ACCEPT);
    batch.rule(r);
  }
  {
    RuleBuilder r("output");  // anything else to the stub's address is a way around it
    r.family(NFPROTO_IPV4)
        .ip4_daddr_in(kStubAddress, 32)
        .reject(NFT_REJECT_ICMPX_UNREACH, NFT_REJECT_ICMPX_PORT_UNREACH);
    batch.rule(r);
  }
  {
    RuleBuilder r("output");  // the call's own loopback servers
    const std::uint8_t loopback[4] = {127, 0, 0, 0};
    r.family(NFPROTO_IPV4).ip4_daddr_in(loopback, 8).verdict(NF_ACCEPT);
    batch.rule(r);
  }
  {
    RuleBuilder r("output");
    std::uint8_t loopback[16] = {};
    loopback[15] = 1;
    r.family(NFPROTO_IPV6).ip6_daddr_in(loopback, 128).verdict(NF_ACCEPT);
    batch.rule(r);
  }
  {
    RuleBuilder r("output");
    r.l4(IPPROTO_TCP).reject(NFT_REJECT_TCP_RST, 0);
    batch.rule(r);
  }
  {
    RuleBuilder r("output");  // UDP (QUIC included) and the rest: ECONNREFUSED at once
    r.reject(NFT_REJECT_ICMPX_UNREACH, NFT_REJECT_ICMPX_PORT_UNREACH);
    batch.rule(r);
  }
  return batch.finish();
}

}  // namespace chock::net
