package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/reinception/rein/internal/llm"
)

// The model wiring of every artefact: which variables the model-calling
// processes get, from where, and that no key is ever written down.

// llmDir is the package whose REIN_LLM_* variables the artefacts set.
const llmDir = "../internal/llm"

var (
	llmEnvOnce  sync.Once
	llmEnvNames map[string]bool
	llmEnvErr   error
)

// llmEnv returns every REIN_LLM_* string constant of internal/llm, the
// variables llm.ConfigFromEnv reads.
func llmEnv(t *testing.T) map[string]bool {
	t.Helper()
	llmEnvOnce.Do(func() {
		llmEnvNames = map[string]bool{}
		files, err := filepath.Glob(filepath.Join(llmDir, "*.go"))
		if err != nil {
			llmEnvErr = err
			return
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				llmEnvErr = err
				return
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(s, "REIN_LLM_") {
						llmEnvNames[s] = true
					}
				}
				return true
			})
		}
	})
	if llmEnvErr != nil {
		t.Fatal(llmEnvErr)
	}
	if !llmEnvNames[llm.EnvProvider] || !llmEnvNames[llm.EnvAPIKey] {
		t.Fatalf("read %v from %s; the provider and key variables are missing", llmEnvNames, llmDir)
	}
	return llmEnvNames
}

// modelEnvNames are the variables every model-calling process gets.
var modelEnvNames = []string{llm.EnvProvider, llm.EnvModel, llm.EnvBaseURL, llm.EnvAPIKey}

// checkModelConfig checks that model settings as an artefact sets them
// are a configuration rein starts with (the key stands in for the one
// the Secret gives).
func checkModelConfig(t *testing.T, where string, env map[string]string) {
	t.Helper()
	for _, n := range modelEnvNames {
		t.Setenv(n, env[n])
	}
	if env[llm.EnvAPIKey] == "" {
		t.Setenv(llm.EnvAPIKey, "key-from-the-secret")
	}
	if err := llm.ConfigFromEnv().Validate(); err != nil {
		t.Errorf("%s: the model settings %v are refused: %v", where, env, err)
	}
}

// literalKey finds an API key written into an artefact: a key variable
// given a value, or something shaped like a vendor key.
var literalKey = regexp.MustCompile(`(?m)(REIN_LLM_API_KEY|OPENAI_API_KEY|ANTHROPIC_API_KEY)\s*[:=]\s*["']?[A-Za-z0-9_\-]{8,}|\bsk-[A-Za-z0-9_\-]{16,}`)

// No artefact holds a literal API key; the pattern itself finds one.
func TestNoLiteralModelKey(t *testing.T) {
	for _, bad := range []string{"REIN_LLM_API_KEY: sk-abcdefghijklmnopqrstu", "OPENAI_API_KEY=abcdefgh1234", `apiKey: "sk-proj-0123456789abcdefXYZ"`} {
		if !literalKey.MatchString(bad) {
			t.Errorf("literalKey does not find %q", bad)
		}
	}
	var files []string
	for _, dir := range []string{composeDir, k8sDir, helmChart} {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "secrets" {
				return filepath.SkipDir // made by make compose-secrets, ignored by git
			}
			if !d.IsDir() {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	files = append(files, "Dockerfile", "Makefile")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := literalKey.Find(b); m != nil {
			t.Errorf("%s holds a literal API key: %q", f, m)
		}
	}
}

// checkLLMEnvNames reports REIN_LLM_* variables internal/llm does not read.
func checkLLMEnvNames(t *testing.T, where string, names []string) {
	t.Helper()
	known := llmEnv(t)
	for _, n := range names {
		if strings.HasPrefix(n, "REIN_LLM_") && !known[n] {
			t.Errorf("%s: %s is not a variable internal/llm reads (%v)", where, n, slices.Sorted(maps.Keys(known)))
		}
	}
}

// callsModel tells whether a rein container's args call a model: the
// agent worker (unless in sidecar mode), or the detector with an llm or
// cascade inception module.
func callsModel(args []string) bool {
	stages := argValue(args, "--stages")
	agent := slices.Contains(strings.Split(stages, ","), "agentworker") && argValue(args, "--agent-backend") != "none"
	module := argValue(args, "--module")
	detector := slices.Contains(strings.Split(stages, ","), "detector") && (module == "llm" || module == "cascade")
	return agent || detector
}

// argValue returns the value of flag in args (--flag v or --flag=v).
func argValue(args []string, flag string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// checkPodModel checks a rein container's model settings: REIN_LLM_*
// names internal/llm reads, the API key only from a Secret, the other
// settings from a value or a ConfigMap that is rendered with that key;
// a container that calls a model has provider, model and key, and its
// settings are a configuration rein starts with.
func checkPodModel(t *testing.T, where string, c corev1.Container, cms map[string]*corev1.ConfigMap) {
	t.Helper()
	env := map[string]string{}
	hasKey := false
	for _, e := range c.Env {
		if !strings.HasPrefix(e.Name, "REIN_LLM_") {
			continue
		}
		checkLLMEnvNames(t, where, []string{e.Name})
		if e.Name == llm.EnvAPIKey {
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name == "" {
				t.Errorf("%s: %s must come from a Secret (secretKeyRef), never a value", where, e.Name)
				continue
			}
			hasKey = true
			continue
		}
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm, ok := cms[ref.Name]
			if !ok {
				t.Errorf("%s: %s from ConfigMap %s, which is not rendered", where, e.Name, ref.Name)
				continue
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				t.Errorf("%s: %s from ConfigMap %s key %s, which it does not have", where, e.Name, ref.Name, ref.Key)
			}
			env[e.Name] = v
		default:
			t.Errorf("%s: %s: the model's settings come from a value or a ConfigMap", where, e.Name)
		}
	}
	if !callsModel(c.Args) {
		return
	}
	if env[llm.EnvProvider] == "" || env[llm.EnvModel] == "" || !hasKey {
		t.Errorf("%s runs %v, which calls a model, without %s, %s and %s from a Secret (it has %v, key %v)", where, c.Args, llm.EnvProvider, llm.EnvModel, llm.EnvAPIKey, env, hasKey)
		return
	}
	checkModelConfig(t, where, env)
}

// podSecrets returns the Secrets a pod reads: mounted, or as variables.
func podSecrets(ps corev1.PodSpec) []string {
	var out []string
	for _, v := range ps.Volumes {
		if v.Secret != nil {
			out = append(out, v.Secret.SecretName)
		}
	}
	for _, c := range append(slices.Clone(ps.InitContainers), ps.Containers...) {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				out = append(out, e.ValueFrom.SecretKeyRef.Name)
			}
		}
		for _, ef := range c.EnvFrom {
			if ef.SecretRef != nil {
				out = append(out, ef.SecretRef.Name)
			}
		}
	}
	return out
}
