package api

import (
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

// TestErrorCodesOneVocabulary checks that the codes the Go side answers
// with (memory's, by statusOfCode, and the HTTP layer's unauthenticated)
// are the codes of API.md §2's table, each with its status, and the
// TypeScript client's ServerErrorCode: the other languages cannot import
// the Go constants, so drift is caught here.
func TestErrorCodesOneVocabulary(t *testing.T) {
	want := map[string]int{codeUnauthenticated: http.StatusUnauthorized}
	for code, st := range statusOfCode {
		want[code] = st
	}
	for code := range fixedMessages {
		if _, ok := want[code]; !ok {
			t.Errorf("fixedMessages has %q, which no error is answered with", code)
		}
	}
	for code := range want {
		if _, ok := fixedMessages[code]; !ok {
			t.Errorf("code %q has no fixed message", code)
		}
	}

	doc, err := os.ReadFile("../../docs/API.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]int{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| (\\d{3}) \\|").FindAllSubmatch(doc, -1) {
		st, _ := strconv.Atoi(string(m[2]))
		documented[string(m[1])] = st
	}
	for code, st := range want {
		if documented[code] != st {
			t.Errorf("docs/API.md: code %s has status %d, the server answers %d", code, documented[code], st)
		}
	}
	for code := range documented {
		if _, ok := want[code]; !ok {
			t.Errorf("docs/API.md documents code %s, which the server never answers", code)
		}
	}

	ts, err := os.ReadFile("../../clients/typescript/src/errors.ts")
	if err != nil {
		t.Fatal(err)
	}
	union := regexp.MustCompile(`(?s)export type ServerErrorCode =(.*?);`).FindSubmatch(ts)
	if union == nil {
		t.Fatal("clients/typescript/src/errors.ts: no ServerErrorCode union")
	}
	var client []string
	for _, m := range regexp.MustCompile(`"([a-z_]+)"`).FindAllSubmatch(union[1], -1) {
		client = append(client, string(m[1]))
	}
	for code := range want {
		if !slices.Contains(client, code) {
			t.Errorf("the TypeScript ServerErrorCode lacks %s", code)
		}
	}
	for _, code := range client {
		if _, ok := want[code]; !ok {
			t.Errorf("the TypeScript ServerErrorCode has %s, which the server never answers", code)
		}
	}
}
