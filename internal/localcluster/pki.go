package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds the credentials of one cluster: a CA, the API server's serving certificate, an
// admin client certificate in the system:masters group, and the service-account signing key.
// Everything is written to <dir>/pki; the PEM bytes are kept for the kubeconfig.
type pki struct {
	ca         *x509.Certificate
	caKey      crypto.Signer // kept in memory only, to issue more client certificates
	caCert     []byte
	clientCert []byte
	clientKey  []byte

	caCertFile      string
	servingCertFile string
	servingKeyFile  string
	saKeyFile       string
	saPubFile       string
}

// certValidity is long enough for a `navarch dev up` cluster left running.
const certValidity = 10 * 365 * 24 * time.Hour

// adminUser is the client certificate's subject; system:masters bypasses RBAC.
var adminUser = pkix.Name{CommonName: "navarch-admin", Organization: []string{"system:masters"}}

func newPKI(dir string, servingIPs []net.IP, servingNames []string) (*pki, error) {
	pkiDir := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pkiDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", pkiDir, err)
	}

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	caTemplate := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "navarch-localcluster-ca"},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := signCertificate(caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("parsing CA certificate: %w", err)
	}

	servingCert, servingKey, err := issue(caCert, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: servingIPs,
		DNSNames:    servingNames,
	})
	if err != nil {
		return nil, fmt.Errorf("issuing serving certificate: %w", err)
	}
	clientCert, clientKey, err := issue(caCert, caKey, clientCertificate(adminUser))
	if err != nil {
		return nil, fmt.Errorf("issuing admin client certificate: %w", err)
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating service-account key: %w", err)
	}
	saKeyPEM, err := encodeKey(saKey)
	if err != nil {
		return nil, fmt.Errorf("encoding service-account key: %w", err)
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("encoding service-account public key: %w", err)
	}

	p := &pki{
		ca:              caCert,
		caKey:           caKey,
		caCert:          pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		clientCert:      clientCert,
		clientKey:       clientKey,
		caCertFile:      filepath.Join(pkiDir, "ca.crt"),
		servingCertFile: filepath.Join(pkiDir, "apiserver.crt"),
		servingKeyFile:  filepath.Join(pkiDir, "apiserver.key"),
		saKeyFile:       filepath.Join(pkiDir, "sa.key"),
		saPubFile:       filepath.Join(pkiDir, "sa.pub"),
	}
	files := map[string][]byte{
		p.caCertFile:                       p.caCert,
		p.servingCertFile:                  servingCert,
		p.servingKeyFile:                   servingKey,
		filepath.Join(pkiDir, "admin.crt"): clientCert,
		filepath.Join(pkiDir, "admin.key"): clientKey,
		p.saKeyFile:                        saKeyPEM,
		p.saPubFile:                        pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER}),
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return p, nil
}

// KubeconfigFor returns a kubeconfig for c.server that authenticates with a client
// certificate of its own, issued for user in groups ("system:masters" bypasses RBAC): a
// client with it shares no TLS connection with another identity's, as clients of different
// clusters would not.
func (c *Cluster) KubeconfigFor(user string, groups ...string) ([]byte, error) {
	cert, key, err := issue(c.creds.ca, c.creds.caKey, clientCertificate(pkix.Name{CommonName: user, Organization: groups}))
	if err != nil {
		return nil, fmt.Errorf("issuing a client certificate for %s: %w", user, err)
	}
	return c.kubeconfigOf(user, cert, key)
}

// clientCertificate is the template of a client certificate for subject.
func clientCertificate(subject pkix.Name) *x509.Certificate {
	return &x509.Certificate{
		Subject:     subject,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
}

// issue creates a key pair and a certificate for it signed by the CA, both PEM-encoded.
func issue(ca *x509.Certificate, caKey crypto.Signer, template *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating key: %w", err)
	}
	der, err := signCertificate(template, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// signCertificate fills in the serial number and validity period and signs.
func signCertificate(template, parent *x509.Certificate, pub crypto.PublicKey, signer crypto.Signer) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	template.SerialNumber = serial
	template.NotBefore = time.Now().Add(-time.Hour) // tolerate clock skew
	template.NotAfter = time.Now().Add(certValidity)
	return x509.CreateCertificate(rand.Reader, template, parent, pub, signer)
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}
