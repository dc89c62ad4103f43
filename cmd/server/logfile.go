package main

import (
	"io"
	"os"

	"github.com/memoryd/memoryd/internal/forensics"
)

// openLog opens an exported log file, or stdin for "-".
func openLog(name string, stdin io.Reader) (*forensics.LogReader, func(), error) {
	in, closeIn := stdin, func() {}
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, nil, err
		}
		in, closeIn = f, func() { f.Close() }
	}
	lr := forensics.NewLogReader(in)
	stop := lr.ReadAhead()
	return lr, func() {
		stop()
		closeIn()
	}, nil
}
