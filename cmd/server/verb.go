package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// verb is one verb of the command line with its help, arguments and flags.
// runVerb parses every verb, so help and usage errors are alike for all.
type verb struct {
	name     string
	synopsis string // the usage line after "memoryd "
	summary  string // one line for the verb list of "memoryd help"
	about    string // what it does, for "memoryd VERB -h", in lines of at most 100 characters
	args     []arg  // positional arguments, in order
	// flags defines the verb's flags on fs and returns what runs the verb
	// once they are parsed. getenv gives defaults such as MEMORYD_DB.
	flags func(fs *flag.FlagSet, getenv func(string) string) runFunc
}

// arg is a positional argument of a verb.
type arg struct {
	name     string
	about    string
	optional bool // only the last ones may be optional
}

// invocation is what a verb runs with, its positional arguments and the
// program's environment.
type invocation struct {
	args           []string
	getenv         func(string) string
	stdin          io.Reader
	stdout, stderr io.Writer
}

// runFunc runs a verb whose flags are parsed.
type runFunc func(ctx context.Context, in *invocation) error

// usageLine returns the verb's usage line and where to find its help. It
// ends every usage error of the verb.
func (v *verb) usageLine() string {
	return fmt.Sprintf("usage: memoryd %s\nRun \"memoryd %s -h\" for its help.", v.synopsis, v.name)
}

// runVerb parses the arguments for v and runs it, or prints its help on -h.
// Any usage error ends with v's usage line.
func runVerb(ctx context.Context, v *verb, in *invocation) error {
	fs, run, err := parseVerb(v, in.args, in.getenv)
	if errors.Is(err, flag.ErrHelp) {
		return printVerbHelp(in.stdout, v, fs)
	}
	if err == nil {
		in.args = fs.Args()
		err = run(ctx, in)
	}
	var ue *usageError
	if errors.As(err, &ue) {
		ue.msg += "\n" + v.usageLine()
	}
	return err
}

// parseVerb defines v's flags and parses args with them. It returns
// flag.ErrHelp for help, and a usage error for anything it cannot parse.
func parseVerb(v *verb, args []string, getenv func(string) string) (*flag.FlagSet, runFunc, error) {
	fs := flag.NewFlagSet(v.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned; help is printed by printVerbHelp
	run := v.flags(fs, getenv)
	if err := fs.Parse(interleaved(fs, args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return fs, nil, err
		}
		return fs, nil, &usageError{err.Error()}
	}
	if db := fs.Lookup("db"); db != nil {
		if err := checkDatabase(db.Value.String()); err != nil {
			return fs, nil, err
		}
	}
	return fs, run, v.checkArgs(fs.Args())
}

// checkArgs reports a missing or extra positional argument.
func (v *verb) checkArgs(got []string) error {
	required := 0
	for _, a := range v.args {
		if !a.optional {
			required++
		}
	}
	if len(got) < required {
		var missing []string
		for _, a := range v.args[len(got):required] {
			missing = append(missing, a.name)
		}
		return &usageError{fmt.Sprintf("%s needs %s", v.name, strings.Join(missing, " and "))}
	}
	if len(got) > len(v.args) {
		extra := quoteAll(got[len(v.args):])
		if len(v.args) == 0 {
			return &usageError{fmt.Sprintf("%s takes no arguments; got %s", v.name, extra)}
		}
		var names []string
		for _, a := range v.args {
			names = append(names, a.name)
		}
		return &usageError{fmt.Sprintf("%s takes %s; got %s more: %s", v.name, strings.Join(names, " "), plural(len(got)-len(v.args), "argument"), extra)}
	}
	return nil
}

// quoteAll quotes each of ss and joins them with spaces.
func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, " ")
}

// plural returns n and noun, in the plural unless n is one.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// printVerbHelp writes v's help to w, with its synopsis, arguments and
// flags.
func printVerbHelp(w io.Writer, v *verb, fs *flag.FlagSet) error {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: memoryd %s\n\n%s\n", v.synopsis, strings.TrimSpace(v.about))
	if len(v.args) > 0 {
		b.WriteString("\nArguments:\n")
		width := 0
		for _, a := range v.args {
			width = max(width, len(a.name))
		}
		for _, a := range v.args {
			about := a.about
			if a.optional {
				about += " (optional)"
			}
			fmt.Fprintf(&b, "  %-*s  %s\n", width, a.name, about)
		}
	}
	b.WriteString("\nFlags (one or two dashes; before, between or after the arguments):\n")
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	_, err := io.WriteString(w, b.String())
	return err
}

// interleaved moves positional arguments behind the flags of fs, so they
// may come before or between flags.
func interleaved(fs *flag.FlagSet, args []string) []string {
	var pos, flags []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue // Parse reports it
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 < len(args) {
			flags = append(flags, args[i+1])
			i++
		}
	}
	return append(append(flags, "--"), pos...)
}
