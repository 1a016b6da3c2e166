#!/bin/sh
# tools/dev/redis_devtools/make_test_certs.sh DIR: the test certificates of the
# TLS tests, made with the openssl command into DIR (an existing, empty
# directory): ca, other-ca (a CA nobody trusts), server (localhost,
# 127.0.0.1), client, wrongname (other.example) and expired (in 2020), each
# NAME.crt and NAME.key, PEM. Used by tls_certs.cpp (the C++ suite) and
# tests/python/test_tls.py. `openssl ca` is the only way (OpenSSL 3.0) to
# give a certificate dates in the past.
set -e
cd "$1"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$1"; }
key ca.key
openssl req -x509 -new -key ca.key -days 2 -subj "/CN=pathlock test CA" -out ca.crt
key other-ca.key
openssl req -x509 -new -key other-ca.key -days 2 -subj "/CN=pathlock other CA" -out other-ca.crt
sign() {
  key "$1.key"
  openssl req -new -key "$1.key" -subj "$2" -out "$1.csr"
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$3" > "$1.ext"
  if [ -n "${4:-}" ]; then
    : > index.txt
    echo 01 > serial
    printf '[ca]\ndefault_ca=c\n[c]\ndatabase=index.txt\nserial=serial\nnew_certs_dir=.\ndefault_md=sha256\npolicy=p\nunique_subject=no\n[p]\ncommonName=supplied\n' > ca.cnf
    openssl ca -batch -config ca.cnf -cert ca.crt -keyfile ca.key -in "$1.csr" -out "$1.crt" -extfile "$1.ext" \
      -startdate 20200101000000Z -enddate 20200102000000Z -notext
  else
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile "$1.ext" -out "$1.crt"
  fi
}
sign server "/CN=localhost" "DNS:localhost,IP:127.0.0.1"
sign client "/CN=pathlock client" "DNS:pathlock-client"
sign wrongname "/CN=other.example" "DNS:other.example"
sign expired "/CN=localhost" "DNS:localhost,IP:127.0.0.1" yes
