#include "net/tls_ca.hpp"

#include <arpa/inet.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>

namespace chock::net {

struct CallCa::Keys {
  EVP_PKEY* ca_key = nullptr;
  X509* ca = nullptr;
  EVP_PKEY* leaf_key = nullptr;  // every leaf's: one key, a certificate a host
  ~Keys() {
    EVP_PKEY_free(ca_key);
    X509_free(ca);
    EVP_PKEY_free(leaf_key);
  }
};

namespace {

// "DNS:name" or "IP:address" (with its mask for a constraint).
std::string general_name(const std::string& host, bool constraint) {
  in_addr a4{};
  in6_addr a6{};
  if (inet_pton(AF_INET, host.c_str(), &a4) == 1)
    return "IP:" + host + (constraint ? "/255.255.255.255" : "");
  if (inet_pton(AF_INET6, host.c_str(), &a6) == 1)
    return "IP:" + host + (constraint ? "/ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff" : "");
  return "DNS:" + host;
}

bool add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return false;
  const bool added = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return added;
}

// A certificate of `key` named `cn`, valid from an hour ago (clocks differ)
// for a day, with a random serial.
X509* new_certificate(EVP_PKEY* key, const std::string& cn) {
  X509* x = X509_new();
  unsigned char serial[16];
  if (x == nullptr || RAND_bytes(serial, sizeof serial) != 1) {
    X509_free(x);
    return nullptr;
  }
  serial[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  const bool ok =
      X509_set_version(x, 2) == 1 && bn != nullptr &&
      BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != nullptr &&
      X509_gmtime_adj(X509_getm_notBefore(x), -3600) != nullptr &&
      X509_gmtime_adj(X509_getm_notAfter(x), 86400) != nullptr && X509_set_pubkey(x, key) == 1 &&
      X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0) == 1;
  BN_free(bn);
  if (!ok) {
    X509_free(x);
    return nullptr;
  }
  return x;
}

// Offers HTTP/1.1 and nothing else, so that what flows can be read; a
// client that offers no HTTP/1.1 gets no protocol named.
int choose_http11(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                  unsigned int inlen, void*) {
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, outlen, kHttp11, sizeof kHttp11, in, inlen) != OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace

std::string openssl_reason() {
  const unsigned long e = ERR_peek_last_error();
  ERR_clear_error();
  if (e == 0) return "";
  char text[256];
  ERR_error_string_n(e, text, sizeof text);
  return text;
}

CallCa::CallCa() : keys_(std::make_unique<Keys>()) {}

CallCa::~CallCa() {
  for (auto& [host, ctx] : contexts_) SSL_CTX_free(ctx);
}

Expected<std::unique_ptr<CallCa>> CallCa::make(const std::vector<std::string>& hosts) {
  if (hosts.empty()) return Error{"a call's CA needs a host to vouch for", "", EINVAL};
  std::unique_ptr<CallCa> ca(new CallCa());
  ca->hosts_ = hosts;
  Keys& k = *ca->keys_;
  k.ca_key = EVP_EC_gen("P-256");
  k.leaf_key = EVP_EC_gen("P-256");
  if (k.ca_key == nullptr || k.leaf_key == nullptr)
    return Error{"make the call's CA keys: " + openssl_reason(), "", EPROTO};
  k.ca = new_certificate(k.ca_key, "Chock call CA (its hosts with a credential only)");
  if (k.ca == nullptr) return Error{"make the call's CA certificate: " + openssl_reason(), "", EPROTO};
  std::string permitted = "critical";
  for (const auto& h : hosts) permitted += ",permitted;" + general_name(h, true);
  if (X509_set_issuer_name(k.ca, X509_get_subject_name(k.ca)) != 1 ||
      !add_extension(k.ca, k.ca, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
      !add_extension(k.ca, k.ca, NID_key_usage, "critical,keyCertSign,cRLSign") ||
      !add_extension(k.ca, k.ca, NID_subject_key_identifier, "hash") ||
      !add_extension(k.ca, k.ca, NID_name_constraints, permitted) ||
      X509_sign(k.ca, k.ca_key, EVP_sha256()) == 0)
    return Error{"sign the call's CA certificate: " + openssl_reason(), "", EPROTO};
  BIO* pem = BIO_new(BIO_s_mem());
  if (pem == nullptr || PEM_write_bio_X509(pem, k.ca) != 1) {
    BIO_free(pem);
    return Error{"write the call's CA certificate: " + openssl_reason(), "", EPROTO};
  }
  char* data = nullptr;
  const long size = BIO_get_mem_data(pem, &data);
  ca->ca_pem_.assign(data, static_cast<std::size_t>(size));
  BIO_free(pem);
  return ca;
}

Expected<SSL_CTX*> CallCa::server_context(const std::string& host) {
  std::lock_guard lock(mutex_);
  if (auto it = contexts_.find(host); it != contexts_.end()) return it->second;
  if (std::find(hosts_.begin(), hosts_.end(), host) == hosts_.end())
    return Error{"the call's CA vouches only for the hosts with a credential", host, EPERM};
  Keys& k = *keys_;
  X509* leaf = new_certificate(k.leaf_key, host);
  const bool signed_ok = leaf != nullptr && X509_set_issuer_name(leaf, X509_get_subject_name(k.ca)) == 1 &&
                         add_extension(leaf, k.ca, NID_basic_constraints, "critical,CA:FALSE") &&
                         add_extension(leaf, k.ca, NID_key_usage, "critical,digitalSignature") &&
                         add_extension(leaf, k.ca, NID_ext_key_usage, "serverAuth") &&
                         add_extension(leaf, k.ca, NID_subject_alt_name, general_name(host, false)) &&
                         add_extension(leaf, k.ca, NID_authority_key_identifier, "keyid:always") &&
                         X509_sign(leaf, k.ca_key, EVP_sha256()) != 0;
  SSL_CTX* ctx = signed_ok ? SSL_CTX_new(TLS_server_method()) : nullptr;
  const bool ready = ctx != nullptr && SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1 &&
                     SSL_CTX_use_certificate(ctx, leaf) == 1 && SSL_CTX_use_PrivateKey(ctx, k.leaf_key) == 1;
  X509_free(leaf);
  if (!ready) {
    SSL_CTX_free(ctx);
    return Error{"issue the certificate of " + host + ": " + openssl_reason(), "", EPROTO};
  }
  SSL_CTX_set_alpn_select_cb(ctx, choose_http11, nullptr);
  contexts_[host] = ctx;
  return ctx;
}

}  // namespace chock::net
