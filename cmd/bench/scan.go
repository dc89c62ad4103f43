package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// scanVerb is the hidden verb that is the search-all rows' ceiling: a
// brute-force byte search of the raw session files, in its own process
// like memoryd search.
const scanVerb = "scan-files"

// scanResult is what "bench scan-files" prints.
type scanResult struct {
	Files   int      `json:"files"`   // .jsonl files read
	Matched []string `json:"matched"` // those that hold the needle
	Bytes   int64    `json:"bytes"`   // read
}

// runScan runs "bench scan-files NEEDLE DIR": it reads every .jsonl file
// under DIR, in 1 MiB reads, and stops reading a file at the needle's
// first occurrence, as grep -rlF does, then prints the files that hold it.
func runScan(args []string, stdout io.Writer) error {
	if len(args) != 2 || args[0] == "" {
		return &usageError{"usage: bench " + scanVerb + " NEEDLE DIR"}
	}
	res, err := scanFiles([]byte(args[0]), args[1])
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(res)
}

func scanFiles(needle []byte, dir string) (scanResult, error) {
	res := scanResult{Matched: []string{}}
	buf := make([]byte, 1<<20+len(needle))
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() || !strings.HasSuffix(path, ".jsonl") {
			return err
		}
		res.Files++
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		keep := 0 // the bytes kept from the last read, which a match may start in
		for {
			n, err := f.Read(buf[keep:])
			res.Bytes += int64(n)
			end := keep + n
			if bytes.Contains(buf[:end], needle) {
				res.Matched = append(res.Matched, path)
				return nil
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			keep = min(end, len(needle)-1)
			copy(buf, buf[end-keep:end])
		}
	})
	return res, err
}
