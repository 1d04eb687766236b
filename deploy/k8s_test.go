package deploy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/reinception/rein/streams"
)

const k8sDir = "k8s"

// object is the part of a Kubernetes object the tests read. Objects are
// decoded into these local types rather than k8s.io/api's: that module
// and its dependencies would be rein's largest dependency by far, for
// tests only.
type object struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	raw []byte
}

type deployment struct {
	Spec struct {
		Replicas int `yaml:"replicas"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// job is the part of a batch/v1 Job the tests read; its pod template is
// laid out as a Deployment's.
type job struct {
	Spec struct {
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type podSpec struct {
	RestartPolicy   string `yaml:"restartPolicy"`
	SecurityContext struct {
		RunAsNonRoot *bool `yaml:"runAsNonRoot"`
		RunAsUser    *int  `yaml:"runAsUser"`
	} `yaml:"securityContext"`
	AutomountServiceAccountToken *bool       `yaml:"automountServiceAccountToken"`
	Containers                   []container `yaml:"containers"`
	Volumes                      []struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
		Secret *struct {
			SecretName  string `yaml:"secretName"`
			DefaultMode *int   `yaml:"defaultMode"`
			Items       []struct {
				Key  string `yaml:"key"`
				Path string `yaml:"path"`
			} `yaml:"items"`
		} `yaml:"secret"`
		EmptyDir any `yaml:"emptyDir"`
	} `yaml:"volumes"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

type container struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Env   []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext struct {
		RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

// decodeAll decodes every YAML document of b.
func decodeAll(t *testing.T, where string, b []byte) []object {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var out []object
	for {
		var raw map[string]any
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if raw == nil {
			continue
		}
		doc, err := yaml.Marshal(raw)
		if err != nil {
			t.Fatal(err)
		}
		var o object
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
			t.Errorf("%s: a document without apiVersion, kind or metadata.name: %s", where, doc)
		}
		o.raw = doc
		out = append(out, o)
	}
}

func (o object) decode(t *testing.T, v any) {
	t.Helper()
	if err := yaml.Unmarshal(o.raw, v); err != nil {
		t.Fatalf("%s %s: %v", o.Kind, o.Metadata.Name, err)
	}
}

// manifests reads every object of deploy/k8s that kustomization.yaml
// lists, and checks that it lists every manifest there.
func manifests(t *testing.T) []object {
	t.Helper()
	var kust struct {
		Resources []string `yaml:"resources"`
		Images    []struct {
			Name string `yaml:"name"`
		} `yaml:"images"`
	}
	b, err := os.ReadFile(filepath.Join(k8sDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &kust); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(k8sDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		base := filepath.Base(f)
		if base == "kustomization.yaml" || base == "nats-values.yaml" {
			continue
		}
		if !slices.Contains(kust.Resources, base) {
			t.Errorf("%s is not in kustomization.yaml's resources", base)
		}
	}
	var objs []object
	for _, r := range kust.Resources {
		b, err := os.ReadFile(filepath.Join(k8sDir, r))
		if err != nil {
			t.Fatalf("kustomization.yaml lists %s: %v", r, err)
		}
		objs = append(objs, decodeAll(t, r, b)...)
	}
	return objs
}

func subset(sub, of map[string]string) bool {
	for k, v := range sub {
		if of[k] != v {
			return false
		}
	}
	return len(sub) > 0
}

var quantity = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi)?$`)

// Every Deployment runs rein non-root with probes, resources, the
// credentials from a Secret and flags rein has; each has a PDB, and the
// NetworkPolicy covers its pods.
func TestKubernetesManifests(t *testing.T) {
	objs := manifests(t)
	byKind := map[string][]object{}
	names := map[string]bool{}
	for _, o := range objs {
		byKind[o.Kind] = append(byKind[o.Kind], o)
		names[o.Kind+"/"+o.Metadata.Name] = true
	}
	deps := byKind["Deployment"]
	components := map[string]bool{}
	for _, d := range deps {
		var dep deployment
		d.decode(t, &dep)
		where := "Deployment " + d.Metadata.Name
		tmpl := dep.Spec.Template
		components[tmpl.Metadata.Labels["app.kubernetes.io/component"]] = true
		if !subset(dep.Spec.Selector.MatchLabels, tmpl.Metadata.Labels) {
			t.Errorf("%s: selector %v does not select its pods %v", where, dep.Spec.Selector.MatchLabels, tmpl.Metadata.Labels)
		}
		if dep.Spec.Replicas < 2 {
			t.Errorf("%s: %d replicas; a stage needs a standby", where, dep.Spec.Replicas)
		}
		ps := tmpl.Spec
		checkPodSecurity(t, where, ps)
		if len(ps.Containers) != 1 {
			t.Fatalf("%s: %d containers, want 1", where, len(ps.Containers))
		}
		checkContainer(t, where, ps, ps.Containers[0], names)
		checkNATSKeys(t, where, ps, ps.Containers[0], tmpl.Metadata.Labels["app.kubernetes.io/component"])
	}
	jobs := byKind["Job"]
	if len(jobs) != 1 {
		t.Fatalf("%d Jobs, want rein-provision", len(jobs))
	}
	var j job
	jobs[0].decode(t, &j)
	where := "Job " + jobs[0].Metadata.Name
	ps := j.Spec.Template.Spec
	checkPodSecurity(t, where, ps)
	if p := ps.RestartPolicy; p != "OnFailure" && p != "Never" {
		t.Errorf("%s: restartPolicy %q; a Job's pods must be OnFailure or Never", where, p)
	}
	if len(ps.Containers) != 1 || len(ps.Containers[0].Args) == 0 || ps.Containers[0].Args[0] != "provision" {
		t.Fatalf("%s: want one container running rein provision", where)
	}
	checkArgs(t, where, ps.Containers[0].Args)
	checkNATSKeys(t, where, ps, ps.Containers[0], "provision")
	if len(deps) < 5 {
		t.Errorf("%d Deployments; want one per stage and the ingress", len(deps))
	}
	for _, c := range []string{"ingress", "detector", "injector", "agentworker", "escalation"} {
		if !components[c] {
			t.Errorf("no Deployment for %s", c)
		}
	}
	checkSelectsAll(t, byKind["PodDisruptionBudget"], deps, "PodDisruptionBudget", "spec.selector.matchLabels")
	// The provision Job's pods reach NATS through the same policy.
	checkSelectsAll(t, byKind["NetworkPolicy"], append(slices.Clone(deps), jobs...), "NetworkPolicy", "spec.podSelector.matchLabels")
	checkConfigMap(t, byKind["ConfigMap"])
}

func checkPodSecurity(t *testing.T, where string, ps podSpec) {
	t.Helper()
	if ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot ||
		ps.SecurityContext.RunAsUser == nil || *ps.SecurityContext.RunAsUser == 0 {
		t.Errorf("%s: pod must set runAsNonRoot: true and a non-zero runAsUser", where)
	}
	if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
		t.Errorf("%s: rein needs no Kubernetes API token (automountServiceAccountToken: false)", where)
	}
}

// natsKeysSecret is the Secret of rein's identity seeds (one key per
// <identity>.nk file of rein keys), which no manifest ships.
const natsKeysSecret = "rein-nats-keys"

// checkNATSKeys checks that a pod connects to NATS with rein's identities
// and holds only the seeds it needs: admin's alone for the provision Job;
// reader's and its own for a stage, the ingress's for the ingress. No
// user or password reaches it.
func checkNATSKeys(t *testing.T, where string, ps podSpec, c container, component string) {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == "REIN_NATS_PASSWORD" || e.Name == "REIN_NATS_USER" || e.Name == "REIN_NATS_TOKEN" {
			t.Errorf("%s: %s: pods connect with their nkey identities, not a shared user", where, e.Name)
		}
	}
	dir := ""
	for _, e := range c.Env {
		if e.Name == "REIN_NATS_KEYS_DIR" {
			dir = e.Value
		}
	}
	if dir == "" {
		t.Errorf("%s: no REIN_NATS_KEYS_DIR", where)
	}
	var keysVolume string
	var items []string
	for _, v := range ps.Volumes {
		if v.Secret == nil || v.Secret.SecretName != natsKeysSecret {
			continue
		}
		keysVolume = v.Name
		if v.Secret.DefaultMode == nil || *v.Secret.DefaultMode != 0o400 {
			t.Errorf("%s: volume %s: defaultMode must be 0400", where, v.Name)
		}
		for _, it := range v.Secret.Items {
			if it.Path != it.Key {
				t.Errorf("%s: %s is mounted as %s; rein looks for <identity>.nk", where, it.Key, it.Path)
			}
			items = append(items, strings.TrimSuffix(it.Key, ".nk"))
		}
	}
	mounted := slices.ContainsFunc(c.VolumeMounts, func(m struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	}) bool {
		return m.Name == keysVolume && m.MountPath == dir
	})
	if keysVolume == "" || !mounted {
		t.Errorf("%s: Secret %s is not mounted at REIN_NATS_KEYS_DIR %q", where, natsKeysSecret, dir)
	}
	want := []string{streams.IdentityAdmin}
	if component != "provision" {
		want = []string{streams.IdentityReader, component}
	}
	slices.Sort(items)
	slices.Sort(want)
	if !slices.Equal(items, want) {
		t.Errorf("%s mounts the seeds of %v; want exactly %v (items of Secret %s)", where, items, want, natsKeysSecret)
	}
}

func checkContainer(t *testing.T, where string, ps podSpec, c container, names map[string]bool) {
	t.Helper()
	ports := map[string]bool{}
	for _, p := range c.Ports {
		ports[p.Name] = true
	}
	for what, pr := range map[string]struct {
		p    *probe
		path string
	}{"liveness": {c.LivenessProbe, "/healthz"}, "readiness": {c.ReadinessProbe, "/readyz"}} {
		if pr.p == nil || pr.p.HTTPGet == nil || pr.p.HTTPGet.Path != pr.path {
			t.Errorf("%s: %s probe must GET %s", where, what, pr.path)
			continue
		}
		if name, ok := pr.p.HTTPGet.Port.(string); ok && !ports[name] {
			t.Errorf("%s: %s probe's port %q is not a container port", where, what, name)
		}
	}
	for _, r := range []string{"cpu", "memory"} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		if !quantity.MatchString(req) || !quantity.MatchString(lim) {
			t.Errorf("%s: resources %s request %q and limit %q must both be set", where, r, req, lim)
		}
	}
	sc := c.SecurityContext
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil ||
		!*sc.ReadOnlyRootFilesystem || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("%s: container must forbid privilege escalation, mount its root read-only and drop ALL capabilities", where)
	}
	if c.Image == "" {
		t.Errorf("%s: no image", where)
	}
	checkArgs(t, where, c.Args)
	if !slices.Contains(c.Args, "--stages") {
		t.Errorf("%s: no --stages: every Deployment runs its own stage", where)
	}
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name)
		if strings.Contains(e.Name, "PASSWORD") || strings.Contains(e.Name, "TOKEN") && !strings.HasSuffix(e.Name, "TOKENS") {
			if e.Value != "" {
				t.Errorf("%s: %s has a literal value; credentials come from a Secret", where, e.Name)
			}
		}
	}
	checkEnv(t, where, env)
	vols := map[string]bool{}
	for _, v := range ps.Volumes {
		vols[v.Name] = true
		if v.ConfigMap != nil && !names["ConfigMap/"+v.ConfigMap.Name] {
			t.Errorf("%s: volume %s mounts ConfigMap %s, which no manifest defines", where, v.Name, v.ConfigMap.Name)
		}
	}
	for _, m := range c.VolumeMounts {
		if !vols[m.Name] {
			t.Errorf("%s: mount of undeclared volume %s", where, m.Name)
		}
	}
}

// checkSelectsAll reports Deployments whose pods no object of kind
// selects (selector read at path).
func checkSelectsAll(t *testing.T, objs []object, deps []object, kind, path string) {
	t.Helper()
	var selectors []map[string]string
	for _, o := range objs {
		var v struct {
			Spec struct {
				Selector struct {
					MatchLabels map[string]string `yaml:"matchLabels"`
				} `yaml:"selector"`
				PodSelector struct {
					MatchLabels map[string]string `yaml:"matchLabels"`
				} `yaml:"podSelector"`
				PolicyTypes []string `yaml:"policyTypes"`
			} `yaml:"spec"`
		}
		o.decode(t, &v)
		sel := v.Spec.Selector.MatchLabels
		if kind == "NetworkPolicy" {
			sel = v.Spec.PodSelector.MatchLabels
			if o.Metadata.Name == "rein" && (!slices.Contains(v.Spec.PolicyTypes, "Ingress") || !slices.Contains(v.Spec.PolicyTypes, "Egress")) {
				t.Errorf("NetworkPolicy rein must restrict both Ingress and Egress")
			}
		}
		selectors = append(selectors, sel)
	}
	for _, d := range deps {
		var dep deployment
		d.decode(t, &dep)
		if !slices.ContainsFunc(selectors, func(s map[string]string) bool { return subset(s, dep.Spec.Template.Metadata.Labels) }) {
			t.Errorf("no %s selects the pods of Deployment %s (%s)", kind, d.Metadata.Name, path)
		}
	}
}

// The ConfigMap's rein.yaml holds only flags of both rein serve and rein
// provision, and the sections rein reads.
func checkConfigMap(t *testing.T, cms []object) {
	t.Helper()
	if len(cms) != 1 {
		t.Fatalf("%d ConfigMaps, want rein-config", len(cms))
	}
	var cm struct {
		Data map[string]string `yaml:"data"`
	}
	cms[0].decode(t, &cm)
	var file map[string]any
	if err := yaml.Unmarshal([]byte(cm.Data["rein.yaml"]), &file); err != nil || len(file) == 0 {
		t.Fatalf("ConfigMap rein.yaml: %v", err)
	}
	// The Deployments and the provision Job read it: rein provision
	// refuses a key that is not one of its flags.
	serve, provision := flagsOf(t, "serve"), flagsOf(t, "provision")
	for k := range file {
		if (!serve[k] || !provision[k]) && k != "streams" && k != "sinks" {
			t.Errorf("ConfigMap rein.yaml: %s is neither a flag of both rein serve and rein provision nor a section", k)
		}
	}
}

// kubectl kustomize renders the base as it will be applied (skipped when
// kubectl is absent: no cluster is needed, only the binary).
func TestKustomizeRenders(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not on PATH")
	}
	out, err := exec.CommandContext(t.Context(), kubectl, "kustomize", k8sDir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, out)
	}
	objs := decodeAll(t, "kustomize output", out)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.Kind]++
	}
	if kinds["Deployment"] != 5 || kinds["Job"] != 1 || kinds["NetworkPolicy"] == 0 || kinds["PodDisruptionBudget"] != 5 {
		t.Fatalf("rendered %v", kinds)
	}
	if !strings.Contains(string(out), "namespace: rein") {
		t.Fatalf("objects are not placed in namespace rein")
	}
}

// The NATS Helm values describe a 3-node JetStream cluster with no user or
// password of its own: the authorization comes from the values `rein keys
// server-config --helm-values` generates, passed after these.
func TestNATSHelmValues(t *testing.T) {
	var v struct {
		Config struct {
			Cluster struct {
				Enabled  bool `yaml:"enabled"`
				Replicas int  `yaml:"replicas"`
			} `yaml:"cluster"`
			JetStream struct {
				Enabled bool `yaml:"enabled"`
			} `yaml:"jetstream"`
		} `yaml:"config"`
	}
	b, err := os.ReadFile(filepath.Join(k8sDir, "nats-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if !v.Config.Cluster.Enabled || v.Config.Cluster.Replicas != 3 || !v.Config.JetStream.Enabled {
		t.Fatalf("nats-values.yaml: want a 3-node cluster with JetStream, got %+v", v.Config)
	}
	if regexp.MustCompile(`(?im)^\s*(password|user)\s*:`).Match(b) {
		t.Errorf("nats-values.yaml sets a user or password; rein's identities come from rein keys server-config --helm-values")
	}
	if !strings.Contains(string(b), "rein keys server-config") || !strings.Contains(string(b), "--helm-values") || !strings.Contains(string(b), "-f rein-auth-values.yaml") {
		t.Errorf("nats-values.yaml does not say how to generate and pass rein's authorization values")
	}
}
