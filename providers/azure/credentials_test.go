package azure

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/cloudmetrics"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	azemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/azure"
)

// TestCredentials: each way to authenticate other than the client secret
// (newTestEnv's) gets a token from the emulator's Azure AD through the
// real azidentity credential, and the clients then call ARM with it.
func TestCredentials(t *testing.T) {
	for _, tt := range []struct {
		name string
		// setup registers the identity with Azure AD and fills in the
		// section's credential fields.
		setup func(t *testing.T, emu *azemu.Emulator, s *Section)
	}{
		{"client certificate", func(t *testing.T, emu *azemu.Emulator, s *Section) {
			const app = "6b1e4a47-1111-2222-3333-0123456789ab"
			cert, keyPEM := selfSigned(t)
			emu.RegisterClientCertificate(app, cert)
			path := filepath.Join(t.TempDir(), "sp.pem")
			if err := os.WriteFile(path, append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), keyPEM...), 0o600); err != nil {
				t.Fatal(err)
			}
			s.AADClientID, s.AADClientCertPath = app, path
		}},
		{"workload identity, the webhook's environment winning over the section", func(t *testing.T, emu *azemu.Emulator, s *Section) {
			const app = "7c1e4a47-1111-2222-3333-0123456789ab"
			emu.RegisterFederatedToken(app, "projected-service-account-token")
			path := filepath.Join(t.TempDir(), "azure-identity-token")
			if err := os.WriteFile(path, []byte("projected-service-account-token"), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Setenv("AZURE_CLIENT_ID", app)
			t.Setenv("AZURE_TENANT_ID", s.TenantID)
			t.Setenv("AZURE_FEDERATED_TOKEN_FILE", path)
			// The section names another application and file: the
			// environment the webhook injects wins.
			s.UseFederatedWorkloadIdentityExtension = true
			s.AADClientID = "8d1e4a47-1111-2222-3333-0123456789ab"
			s.AADFederatedTokenFile = "/nonexistent/token"
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			emu, srv, s := startEmulator(t, azemu.Config{})
			tt.setup(t, emu, s)
			s.SetDefaults()
			s.MaxAttempts = 2
			if errs := s.Validate(nil); len(errs) > 0 {
				t.Fatalf("section: %v", errs.ToAggregate())
			}
			setup, err := newClientSetup(s, cloudmetrics.NewRecorder())
			if err != nil {
				t.Fatal(err)
			}
			api, err := newClients(t.Context(), s, setup)
			if err != nil {
				t.Fatalf("no token: %v", err)
			}
			p := api.vms.NewListPager(s.ResourceGroup, nil)
			if _, err := p.NextPage(t.Context()); err != nil {
				t.Fatalf("ARM with the token: %v", err)
			}
			if n := srv.CallCount("aad:Token"); n != 1 {
				t.Errorf("%d token requests, want 1 (the warm-up's token serves ARM)", n)
			}
		})
	}
}

// selfSigned is a certificate and its PEM private key for a service
// principal.
func selfSigned(t *testing.T) (*x509.Certificate, []byte) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "k8s-ccm"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return cert, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb})
}

// TestFirstTokenAzureADBusy: Azure AD throttling or failing the first
// token at start does not stop the manager (a restarted manager would
// stay down for as long as it lasts); the token comes with the first ARM
// call once Azure AD answers. A wrong secret still stops it at start.
func TestFirstTokenAzureADBusy(t *testing.T) {
	start := func(t *testing.T, secret string, fault *cloudsim.FaultSpec) (*clients, *cloudsim.Server, azemu.Fixture, error) {
		t.Helper()
		emu, srv, s := startEmulator(t, azemu.Config{})
		fx := emu.Fixture()
		if secret == "" {
			secret = fx.ClientSecret
		}
		s.AADClientID, s.AADClientSecret = fx.ClientID, secret
		s.SetDefaults()
		s.MaxAttempts = 2
		if errs := s.Validate(nil); len(errs) > 0 {
			t.Fatalf("section: %v", errs.ToAggregate())
		}
		setup, err := newClientSetup(s, cloudmetrics.NewRecorder())
		if err != nil {
			t.Fatal(err)
		}
		setup.retry.RetryDelay, setup.retry.MaxRetryDelay = 10*time.Millisecond, 50*time.Millisecond
		if fault != nil {
			if err := srv.SetFault(*fault); err != nil {
				t.Fatal(err)
			}
		}
		api, err := newClients(t.Context(), s, setup)
		return api, srv, fx, err
	}
	for _, f := range []cloudsim.FaultSpec{
		{Op: "aad:*", ThrottleNext: 1 << 30},
		{Op: "aad:*", FailNext: 1 << 30},
	} {
		t.Run(fmt.Sprintf("throttled %v failing %v", f.ThrottleNext > 0, f.FailNext > 0), func(t *testing.T) {
			api, srv, fx, err := start(t, "", &f)
			if err != nil {
				t.Fatalf("Azure AD busy stopped the start: %v", err)
			}
			if srv.CallCount("aad:*") == 0 {
				t.Fatal("no first token asked for")
			}
			list := func() error {
				_, err := api.vms.NewListPager(fx.ResourceGroup, nil).NextPage(t.Context())
				return err
			}
			if err := list(); err == nil {
				t.Error("an ARM call succeeded without a token")
			}
			srv.ClearFault(f.Op)
			if err := list(); err != nil {
				t.Errorf("once Azure AD answers, ARM with the token: %v", err)
			}
		})
	}
	t.Run("wrong secret", func(t *testing.T) {
		if _, _, _, err := start(t, "not-the-secret", nil); err == nil || !strings.Contains(err.Error(), "invalid_client") {
			t.Errorf("a wrong secret: %v, want the start stopped with Azure AD's invalid_client", err)
		}
	})
}
