package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// The manifests are checked against the binary they will run: rein is
// built once per test run and asked for its flags (`rein serve --help`),
// so that a flag renamed in the code fails here, not in a cluster.
var (
	buildOnce sync.Once
	reinBin   string
	buildErr  error
	binDir    string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func rein(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "rein-deploy-test")
		if buildErr != nil {
			return
		}
		reinBin = filepath.Join(binDir, "rein")
		cmd := exec.Command("go", "build", "-o", reinBin, "../cmd/rein")
		var out []byte
		if out, buildErr = cmd.CombinedOutput(); buildErr != nil {
			buildErr = &buildError{buildErr, string(out)}
		}
	})
	if buildErr != nil {
		t.Fatalf("build rein: %v", buildErr)
	}
	return reinBin
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

var flagLine = regexp.MustCompile(`^\s+(?:-\w, )?--([a-z0-9-]+)`)

var (
	helpMu    sync.Mutex
	helpCache = map[string]map[string]bool{}
)

// flagsOf returns the flags `rein <command> --help` lists.
func flagsOf(t *testing.T, command string) map[string]bool {
	t.Helper()
	helpMu.Lock()
	defer helpMu.Unlock()
	if f, ok := helpCache[command]; ok {
		return f
	}
	out, err := exec.Command(rein(t), command, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("rein %s --help: %v\n%s", command, err, out)
	}
	flags := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if m := flagLine.FindStringSubmatch(line); m != nil {
			flags[m[1]] = true
		}
	}
	if len(flags) < 3 {
		t.Fatalf("rein %s --help lists only %v", command, flags)
	}
	helpCache[command] = flags
	return flags
}

// checkArgs reports every --flag of args (after the command) that the
// rein command does not have, and --stages values that name no stage.
func checkArgs(t *testing.T, where string, args []string) {
	t.Helper()
	if len(args) == 0 {
		t.Errorf("%s: no rein command", where)
		return
	}
	flags := flagsOf(t, args[0])
	for i, a := range args[1:] {
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		if !flags[name] {
			t.Errorf("%s: rein %s has no flag --%s", where, args[0], name)
		}
		if name == "stages" && i+2 < len(args) {
			for _, s := range strings.Split(args[i+2], ",") {
				if !knownStages[s] {
					t.Errorf("%s: --stages %s: no such stage", where, s)
				}
			}
		}
	}
}

var knownStages = map[string]bool{"all": true, "none": true, "detector": true, "injector": true, "agentworker": true, "escalation": true}

// checkEnv reports REIN_* variables that set no flag of rein serve
// (REIN_LLM_* are the model settings, read apart from the flags: they
// must be internal/llm's) and are not listed by `rein --help` either
// (secrets taken from the environment only, such as REIN_NATS_PASSWORD).
func checkEnv(t *testing.T, where string, names []string) {
	t.Helper()
	checkLLMEnvNames(t, where, names)
	flags := flagsOf(t, "serve")
	root, err := exec.Command(rein(t), "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("rein --help: %v\n%s", err, root)
	}
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, "REIN_")
		if !ok || strings.HasPrefix(rest, "LLM_") || strings.Contains(string(root), "  "+n+" ") {
			continue
		}
		if flag := strings.ReplaceAll(strings.ToLower(rest), "_", "-"); !flags[flag] {
			t.Errorf("%s: %s sets no flag of rein serve (--%s)", where, n, flag)
		}
	}
}
