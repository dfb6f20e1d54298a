// A call's CA: the leaf it issues for a host with a credential passes a
// client's full check (chain, name, ALPN http/1.1) when the client trusts
// the CA's PEM; a client that asked for another name refuses it; a host
// without a credential gets no certificate at all.
#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <sys/socket.h>

#include <csignal>

#include <string>
#include <thread>

#include "net/tls_ca.hpp"
#include "util/fd.hpp"

namespace chock::net {
namespace {

struct Handshake {
  bool server_ok = false;
  bool client_ok = false;
  long verify = -1;
  std::string alpn;
};

// A peer that gives up closes its end, and the other's next write would
// raise SIGPIPE: each side runs in a thread of its own that holds it blocked
// (as the relay's threads do), and a signal left pending goes with the thread.
void hold_sigpipe() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

// The client trusts `ca_pem` only, asks for `name`, offers h2 and http/1.1.
Handshake handshake(SSL_CTX* server_ctx, const std::string& ca_pem, const std::string& name) {
  int pair[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  UniqueFd a(pair[0]), b(pair[1]);
  Handshake h;
  std::thread server([&] {
    hold_sigpipe();
    SSL* ssl = SSL_new(server_ctx);
    SSL_set_fd(ssl, a.get());
    h.server_ok = SSL_accept(ssl) == 1;
    SSL_free(ssl);
    a.reset();
  });
  std::thread client([&] {
    hold_sigpipe();
    SSL_CTX* client_ctx = SSL_CTX_new(TLS_client_method());
    BIO* bio = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
    X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    X509_STORE_add_cert(SSL_CTX_get_cert_store(client_ctx), ca);
    SSL_CTX_set_verify(client_ctx, SSL_VERIFY_PEER, nullptr);
    static const unsigned char kOffer[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    SSL_CTX_set_alpn_protos(client_ctx, kOffer, sizeof kOffer);
    SSL* ssl = SSL_new(client_ctx);
    SSL_set_fd(ssl, b.get());
    SSL_set_tlsext_host_name(ssl, name.c_str());
    SSL_set1_host(ssl, name.c_str());
    h.client_ok = SSL_connect(ssl) == 1;
    h.verify = SSL_get_verify_result(ssl);
    const unsigned char* proto = nullptr;
    unsigned int len = 0;
    SSL_get0_alpn_selected(ssl, &proto, &len);
    if (proto != nullptr) h.alpn.assign(reinterpret_cast<const char*>(proto), len);
    SSL_free(ssl);
    b.reset();
    X509_free(ca);
    BIO_free(bio);
    SSL_CTX_free(client_ctx);
  });
  client.join();
  server.join();
  return h;
}

TEST(CallCa, ItsLeafPassesAClientsCheckForItsHostAndHttp11Only) {
  auto ca = CallCa::make({"api.example.org", "198.51.100.7"});
  ASSERT_TRUE(ca) << ca.error().message();
  ASSERT_NE((*ca)->ca_pem().find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_EQ((*ca)->ca_pem().find("PRIVATE KEY"), std::string::npos);
  auto ctx = (*ca)->server_context("api.example.org");
  ASSERT_TRUE(ctx) << ctx.error().message();
  const Handshake good = handshake(*ctx, (*ca)->ca_pem(), "api.example.org");
  EXPECT_TRUE(good.client_ok && good.server_ok);
  EXPECT_EQ(good.verify, X509_V_OK);
  EXPECT_EQ(good.alpn, "http/1.1");
  // The same context twice: one certificate a host.
  auto again = (*ca)->server_context("api.example.org");
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *ctx);
  // A client that asked for another name refuses the leaf.
  const Handshake wrong = handshake(*ctx, (*ca)->ca_pem(), "other.example.org");
  EXPECT_FALSE(wrong.client_ok);
  EXPECT_EQ(wrong.verify, X509_V_ERR_HOSTNAME_MISMATCH);
  // A client that trusts another call's CA refuses it too.
  auto other = CallCa::make({"api.example.org"});
  ASSERT_TRUE(other);
  const Handshake foreign = handshake(*ctx, (*other)->ca_pem(), "api.example.org");
  EXPECT_FALSE(foreign.client_ok);
  auto address = (*ca)->server_context("198.51.100.7");
  ASSERT_TRUE(address) << address.error().message();
}

TEST(CallCa, AHostWithoutACredentialGetsNoCertificateAndTheCaIsNameConstrained) {
  auto ca = CallCa::make({"api.example.org"});
  ASSERT_TRUE(ca);
  auto refused = (*ca)->server_context("evil.example.net");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, EPERM);
  BIO* bio = BIO_new_mem_buf((*ca)->ca_pem().data(), static_cast<int>((*ca)->ca_pem().size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  ASSERT_NE(cert, nullptr);
  // Name constraints: even its key could vouch for no other name.
  auto* constraints =
      static_cast<NAME_CONSTRAINTS*>(X509_get_ext_d2i(cert, NID_name_constraints, nullptr, nullptr));
  ASSERT_NE(constraints, nullptr);
  ASSERT_EQ(sk_GENERAL_SUBTREE_num(constraints->permittedSubtrees), 1);
  const GENERAL_NAME* permitted = sk_GENERAL_SUBTREE_value(constraints->permittedSubtrees, 0)->base;
  ASSERT_EQ(permitted->type, GEN_DNS);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(permitted->d.dNSName))),
            "api.example.org");
  NAME_CONSTRAINTS_free(constraints);
  X509_free(cert);
  BIO_free(bio);
  EXPECT_FALSE(CallCa::make({}));
}

}  // namespace
}  // namespace chock::net
