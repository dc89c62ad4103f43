// Package deptest holds memoryd's module-wide dependency rules.
//
// Each rule says which package may import which, with its reason, and
// deptest_test.go checks them against `go list`. The package has no code.
// Its tests also check the package comments of the whole module, and
// doclinks_test.go the relative links of the repository's Markdown files.
package deptest
