package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mattn/go-shellwords"
)

// The docs are the first thing a newcomer runs. Every `rein …` line in a
// shell block of README.md and docs/*.md must name a command that exists
// and parse with that command's flags, so a renamed command or flag breaks
// the build rather than the reader's first day. (docs/integration.md's
// examples are also run against a live serve: TestIntegrationDocLive.)
func TestDocsCommandsParse(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../README.md")
	checked := 0
	for _, f := range files {
		for _, c := range docCommands(t, f) {
			checked++
			t.Run(fmt.Sprintf("%s:%d", filepath.Base(f), c.line), func(t *testing.T) {
				root := newRootCmd()
				cmd, rest, err := root.Find(c.args)
				if err != nil || cmd == root {
					t.Fatalf("%s:%d: %q names no rein command (%v)", f, c.line, c.text, err)
				}
				// Flags only: a positional left over is fine (files, ids).
				if err := cmd.ParseFlags(rest); err != nil {
					t.Fatalf("%s:%d: %q: %v", f, c.line, c.text, err)
				}
			})
		}
	}
	if checked < 10 {
		t.Fatalf("only %d rein command lines found in the docs: the extraction is broken", checked)
	}
}

type docCommand struct {
	line int
	text string
	args []string // after "rein"
}

var (
	fence     = regexp.MustCompile("^```(sh|bash|shell)?\\s*$")
	reinStart = regexp.MustCompile(`^(?:\$ )?(?:go run \./cmd/rein|\./bin/rein|bin/rein|rein)\s+(.*)$`)
)

// docCommands returns the rein invocations of a Markdown file's shell
// blocks: continuation lines joined, comments, pipes and redirections cut.
func docCommands(t *testing.T, path string) []docCommand {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out     []docCommand
		inShell bool
		inBlock bool
		pending string
		start   int
	)
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		l := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			if inBlock {
				inBlock, inShell = false, false
			} else {
				inBlock = true
				inShell = fence.MatchString(strings.TrimSpace(l))
			}
			continue
		}
		if !inShell {
			continue
		}
		if pending == "" {
			start = n
		}
		if strings.HasSuffix(l, `\`) {
			pending += strings.TrimSuffix(l, `\`) + " "
			continue
		}
		full := strings.TrimSpace(pending + l)
		pending = ""
		m := reinStart.FindStringSubmatch(full)
		if m == nil {
			continue
		}
		rest := m[1]
		for _, cut := range []string{" #", " |", " >", " 2>", " &&", " ;", " &"} {
			if i := strings.Index(rest, cut); i >= 0 {
				rest = rest[:i]
			}
		}
		args, err := shellwords.Parse(rest)
		if err != nil {
			t.Fatalf("%s:%d: %q: %v", path, start, full, err)
		}
		out = append(out, docCommand{line: start, text: full, args: args})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
