package openstack

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
)

// auth is how the backend authenticates and finds its endpoints, resolved
// from the section or from its clouds.yaml entry.
type auth struct {
	opts     gophercloud.AuthOptions
	endpoint gophercloud.EndpointOpts
	// tls is the TLS configuration for the OpenStack APIs: the CA bundle
	// to trust (nil roots: the system's), and with clouds.yaml its
	// verify and client-certificate settings.
	tls *tls.Config
}

// resolveAuth turns the section into gophercloud's options. With cloud,
// the clouds.yaml entry is read (and a secure.yaml beside it merged, as
// the OpenStack clients do); a region or endpointType in the section
// overrides the entry's. Errors name the section field to fix; they never
// hold a secret.
func resolveAuth(s *Section) (auth, error) {
	if s.Cloud == "" {
		a := auth{
			opts: gophercloud.AuthOptions{
				IdentityEndpoint:            s.AuthURL,
				Username:                    s.Username,
				UserID:                      s.UserID,
				Password:                    s.Password,
				DomainName:                  s.UserDomainName,
				DomainID:                    s.UserDomainID,
				ApplicationCredentialID:     s.ApplicationCredentialID,
				ApplicationCredentialName:   s.ApplicationCredentialName,
				ApplicationCredentialSecret: s.ApplicationCredentialSecret,
			},
			endpoint: gophercloud.EndpointOpts{Region: s.Region, Availability: availability(s.EndpointType)},
			tls:      &tls.Config{MinVersion: tls.VersionTLS12},
		}
		if s.CAFile != "" {
			pem, err := os.ReadFile(s.CAFile)
			if err != nil {
				return auth{}, fmt.Errorf("openstack.caFile: %w", err)
			}
			a.tls.RootCAs = x509.NewCertPool()
			if !a.tls.RootCAs.AppendCertsFromPEM(pem) {
				return auth{}, fmt.Errorf("openstack.caFile: %s holds no PEM certificate", s.CAFile)
			}
		}
		// A password token is scoped to the project; an application
		// credential is bound to its own and takes no scope.
		switch {
		case s.ProjectID != "":
			a.opts.Scope = &gophercloud.AuthScope{ProjectID: s.ProjectID}
		case s.ProjectName != "":
			a.opts.Scope = &gophercloud.AuthScope{ProjectName: s.ProjectName, DomainName: s.ProjectDomainName, DomainID: s.ProjectDomainID}
		}
		return a, nil
	}

	// clouds.Parse would fall back to searching the working directory and
	// $HOME when the file is missing; the section names one file only.
	if _, err := os.Stat(s.CloudsFile); err != nil {
		return auth{}, fmt.Errorf("openstack.cloudsFile: %w", err)
	}
	opts := []clouds.ParseOption{clouds.WithCloudName(s.Cloud), clouds.WithLocations(s.CloudsFile)}
	if s.Region != "" {
		opts = append(opts, clouds.WithRegion(s.Region))
	}
	if s.EndpointType != "" {
		opts = append(opts, clouds.WithEndpointType(s.EndpointType))
	}
	if s.CAFile != "" {
		opts = append(opts, clouds.WithCACertPath(s.CAFile))
	}
	ao, ep, tlsConfig, err := clouds.Parse(opts...)
	if err != nil {
		return auth{}, fmt.Errorf("openstack.cloud: entry %q of %s: %w", s.Cloud, s.CloudsFile, err)
	}
	switch {
	case ao.IdentityEndpoint == "":
		return auth{}, fmt.Errorf("openstack.cloud: entry %q of %s has no auth.auth_url", s.Cloud, s.CloudsFile)
	case ep.Region == "":
		return auth{}, fmt.Errorf("openstack.cloud: entry %q of %s has no region_name; set it there or as openstack.region", s.Cloud, s.CloudsFile)
	}
	// The scope clouds.Parse builds is what Keystone gets; the legacy
	// tenant fields would only be ignored beside it.
	ao.TenantID, ao.TenantName = "", ""
	return auth{opts: ao, endpoint: ep, tls: tlsConfig}, nil
}

// availability maps endpointType to the catalog interface.
func availability(endpointType string) gophercloud.Availability {
	switch endpointType {
	case "internal":
		return gophercloud.AvailabilityInternal
	case "admin":
		return gophercloud.AvailabilityAdmin
	default:
		return gophercloud.AvailabilityPublic
	}
}
