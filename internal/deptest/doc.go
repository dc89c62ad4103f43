// Package deptest holds memoryd's module-wide dependency rules: which
// package may import which, each rule with its reason, checked by its
// test against `go list` (see deptest_test.go). It has no code; package
// comments of the whole module, and the relative links of the
// repository's Markdown files (doclinks_test.go), are checked here too.
package deptest
