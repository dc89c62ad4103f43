package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The notes fixtures are one memoryd on a notes database, for append16,
// append1 and read8, and the bare servers that answer like it.
var (
	fxNotes      = &fixture{name: "notes server", setup: (*bench).setupNotes}
	fxAppendWarm = &fixture{name: "append warm-up", needs: []*fixture{fxNotes}, setup: (*bench).warmAppends}
	fxBareAppend = &fixture{name: "bare server answering like an append", needs: []*fixture{fxNotes}, setup: (*bench).setupBareAppend}
	fxDurable    = &fixture{name: "append16's durable reference", needs: []*fixture{fxBareAppend}, setup: (*bench).setupDurableAppend}
	fxRead8      = &fixture{name: "read8 note and bare server", needs: []*fixture{fxNotes}, setup: (*bench).setupRead8}
)

// setupNotes starts memoryd on a notes database and attaches.
func (b *bench) setupNotes(ctx context.Context) error {
	var err error
	if b.notes, err = b.startMemoryd(ctx, "memoryd(notes)", filepath.Join(b.scratch, "notes.db")); err != nil {
		return err
	}
	if b.notesTask, err = b.attach(ctx, b.notes, "notes"); err != nil {
		return err
	}
	b.logf("memoryd(notes) at %s, task %s", b.notes.url, b.notesTask)
	return nil
}

// warmAppends drives the notes server with the append16 loop, untimed.
func (b *bench) warmAppends(ctx context.Context) error {
	if _, err := b.append16Loop(ctx, b.notes, b.warmUp()); err != nil {
		return fmt.Errorf("append warm-up: %w", err)
	}
	return nil
}

// setupBareAppend keeps one memoryd append response and starts the bare
// server answering with it, and warms it up.
func (b *bench) setupBareAppend(ctx context.Context) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	resp, err := b.cl.post(ctx, b.notes.url+"/v1/tools/notes_append_to_file", b.appendBody(0), true)
	if err != nil {
		return err
	}
	b.appendBytes = len(resp)
	b.appendFile = filepath.Join(b.scratch, "append-response.json")
	if err := os.WriteFile(b.appendFile, resp, 0o600); err != nil {
		return err
	}
	if b.bareAppend, err = startProc(ctx, "bare-server(append)", []string{self, bareVerb, b.appendFile}, nil, b.progress); err != nil {
		return err
	}
	if _, err := b.append16Loop(ctx, b.bareAppend, b.warmUp()); err != nil {
		return fmt.Errorf("%s warm-up: %w", b.bareAppend.name, err)
	}
	return nil
}

// setupDurableAppend starts the durable reference answering with the
// kept append response, and warms it up.
func (b *bench) setupDurableAppend(ctx context.Context) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	durableDB := filepath.Join(b.scratch, "durable-append.db")
	if b.durableAppend, err = startProc(ctx, "durable-server(append)", []string{self, durableVerb, durableDB, b.appendFile}, nil, b.progress); err != nil {
		return err
	}
	if _, err := b.append16Loop(ctx, b.durableAppend, b.warmUp()); err != nil {
		return fmt.Errorf("%s warm-up: %w", b.durableAppend.name, err)
	}
	return nil
}

// setupRead8 writes the ~4 KB note read8 reads, checks memoryd returns
// it, starts the bare server answering with memoryd's response and warms
// both up.
func (b *bench) setupRead8(ctx context.Context) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var text strings.Builder
	for i := 0; text.Len() < 4000; i++ {
		fmt.Fprintf(&text, "line %03d: the quick brown fox jumps over the lazy dog\n", i)
	}
	args, _ := json.Marshal(map[string]string{"path": "bench/read8.md", "text": text.String()})
	if _, err := b.cl.post(ctx, b.notes.url+"/v1/tools/notes_write_file", b.toolBody(b.notesTask, string(args)), false); err != nil {
		return err
	}
	resp, err := b.cl.post(ctx, b.notes.url+"/v1/tools/notes_read_file", b.readBody(), true)
	if err != nil {
		return err
	}
	var read struct {
		Details struct {
			Text string `json:"text"`
		} `json:"details"`
	}
	if err := json.Unmarshal(resp, &read); err != nil || read.Details.Text != text.String() {
		return fmt.Errorf("notes_read_file did not return the note written (%v): %.200s", err, resp)
	}
	b.readBytes = len(resp)
	file := filepath.Join(b.scratch, "read8-response.json")
	if err := os.WriteFile(file, resp, 0o600); err != nil {
		return err
	}
	if b.bare, err = startProc(ctx, "bare-server", []string{self, bareVerb, file}, nil, b.progress); err != nil {
		return err
	}
	for _, p := range []*proc{b.notes, b.bare} {
		if _, err := b.read8Loop(ctx, p, b.warmUp()); err != nil {
			return fmt.Errorf("read warm-up: %w", err)
		}
	}
	return nil
}
