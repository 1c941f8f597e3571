// Package builtin registers the backends compiled into this binary with
// providers.Default. Each backend has one registration file here guarded by
// `//go:build !providerless || <cloud>`: the default build keeps all of
// them, `-tags providerless,aws` keeps only AWS. Importing this package is
// all the command needs to do.
package builtin
