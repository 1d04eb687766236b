package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	kusttypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

const k8sDir = "k8s"

// k8sNamespace is the namespace kustomization.yaml puts everything in.
const k8sNamespace = "rein"

// apiTypes maps each apiVersion/kind the base may hold to the Go type it
// is decoded into: the Kubernetes API's own (k8s.io/api), the Prometheus
// Operator's ServiceMonitor, and KEDA's ScaledObject written out below.
// An object of any other apiVersion/kind fails the test.
var apiTypes = map[string]func() metav1.Object{
	"v1/Namespace":                            func() metav1.Object { return &corev1.Namespace{} },
	"v1/ConfigMap":                            func() metav1.Object { return &corev1.ConfigMap{} },
	"v1/Service":                              func() metav1.Object { return &corev1.Service{} },
	"apps/v1/Deployment":                      func() metav1.Object { return &appsv1.Deployment{} },
	"batch/v1/Job":                            func() metav1.Object { return &batchv1.Job{} },
	"policy/v1/PodDisruptionBudget":           func() metav1.Object { return &policyv1.PodDisruptionBudget{} },
	"networking.k8s.io/v1/NetworkPolicy":      func() metav1.Object { return &networkingv1.NetworkPolicy{} },
	"networking.k8s.io/v1/Ingress":            func() metav1.Object { return &networkingv1.Ingress{} },
	"monitoring.coreos.com/v1/ServiceMonitor": func() metav1.Object { return &monitoringv1.ServiceMonitor{} },
	"keda.sh/v1alpha1/ScaledObject":           func() metav1.Object { return &scaledObject{} },
}

// scaledObject is KEDA's keda.sh/v1alpha1 ScaledObject, its fields written
// out here from KEDA's API reference: the Go types live in the KEDA
// operator's own module (github.com/kedacore/keda/v2), which would bring
// the operator's whole dependency tree (controller-runtime and every
// scaler's client) for a test. It is decoded as strictly as the API types,
// so an unknown or misplaced field fails; the HPA behaviour and metric
// type are k8s.io/api's own types, as in KEDA's.
type scaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ScaleTargetRef struct {
			APIVersion             string `json:"apiVersion,omitempty"`
			Kind                   string `json:"kind,omitempty"`
			Name                   string `json:"name"`
			EnvSourceContainerName string `json:"envSourceContainerName,omitempty"`
		} `json:"scaleTargetRef"`
		PollingInterval       *int32 `json:"pollingInterval,omitempty"`
		InitialCooldownPeriod *int32 `json:"initialCooldownPeriod,omitempty"`
		CooldownPeriod        *int32 `json:"cooldownPeriod,omitempty"`
		IdleReplicaCount      *int32 `json:"idleReplicaCount,omitempty"`
		MinReplicaCount       *int32 `json:"minReplicaCount,omitempty"`
		MaxReplicaCount       *int32 `json:"maxReplicaCount,omitempty"`
		Advanced              *struct {
			HorizontalPodAutoscalerConfig *struct {
				Name     string                                         `json:"name,omitempty"`
				Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
			} `json:"horizontalPodAutoscalerConfig,omitempty"`
			RestoreToOriginalReplicaCount bool `json:"restoreToOriginalReplicaCount,omitempty"`
			ScalingModifiers              *struct {
				Formula          string                         `json:"formula,omitempty"`
				Target           string                         `json:"target,omitempty"`
				ActivationTarget string                         `json:"activationTarget,omitempty"`
				MetricType       autoscalingv2.MetricTargetType `json:"metricType,omitempty"`
			} `json:"scalingModifiers,omitempty"`
		} `json:"advanced,omitempty"`
		Triggers []kedaTrigger `json:"triggers"`
		Fallback *struct {
			FailureThreshold int32  `json:"failureThreshold"`
			Replicas         int32  `json:"replicas"`
			Behavior         string `json:"behavior,omitempty"`
		} `json:"fallback,omitempty"`
	} `json:"spec"`
}

// kedaTrigger is one of a ScaledObject's triggers; KEDA reads its
// metadata as strings only.
type kedaTrigger struct {
	Type              string            `json:"type"`
	Name              string            `json:"name,omitempty"`
	UseCachedMetrics  bool              `json:"useCachedMetrics,omitempty"`
	Metadata          map[string]string `json:"metadata"`
	AuthenticationRef *struct {
		Name string `json:"name"`
		Kind string `json:"kind,omitempty"`
	} `json:"authenticationRef,omitempty"`
	MetricType autoscalingv2.MetricTargetType `json:"metricType,omitempty"`
}

// decodeObject decodes one rendered object into its API type, strictly:
// an unknown or duplicated field, a value of the wrong type (a number
// where the API wants a string included), or an apiVersion/kind apiTypes
// does not know is an error.
func decodeObject(b []byte) (metav1.Object, string, error) {
	var tm metav1.TypeMeta
	if err := k8syaml.Unmarshal(b, &tm); err != nil {
		return nil, "", err
	}
	key := tm.APIVersion + "/" + tm.Kind
	mk, ok := apiTypes[key]
	if !ok {
		return nil, key, fmt.Errorf("no API type known for %s", key)
	}
	// YAML to JSON as written (not guided by the target type, which would
	// turn a number into the string a field wants, where the API server
	// refuses it), then JSON into the type, refusing unknown fields.
	j, err := k8syaml.YAMLToJSONStrict(b)
	if err != nil {
		return nil, key, fmt.Errorf("%s: %w", key, err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	obj := mk()
	if err := dec.Decode(obj); err != nil {
		return nil, key, fmt.Errorf("%s: %w", key, err)
	}
	return obj, key, nil
}

// rendered is the base as kustomize renders it, each object decoded.
type rendered struct {
	objs []metav1.Object
}

func of[T metav1.Object](r rendered) []T {
	var out []T
	for _, o := range r.objs {
		if v, ok := o.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// render runs kustomize (the library kubectl kustomize is built on) over
// deploy/k8s and decodes every object it renders; it also checks that
// kustomization.yaml lists every manifest in the directory.
func render(t *testing.T) rendered {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(k8sDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var kust kusttypes.Kustomization
	if err := k8syaml.UnmarshalStrict(b, &kust); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if kust.Namespace != k8sNamespace {
		t.Errorf("kustomization.yaml: namespace %q, want %q", kust.Namespace, k8sNamespace)
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
	return renderDir(t, k8sDir)
}

// renderDir runs kustomize over one kustomization (the base or an
// overlay) and decodes every object it renders.
func renderDir(t *testing.T, kdir string) rendered {
	t.Helper()
	dir, err := filepath.Abs(kdir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", kdir, err)
	}
	var r rendered
	for _, res := range m.Resources() {
		y, err := res.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		obj, key, err := decodeObject(y)
		if err != nil {
			t.Errorf("rendered %s: %v", res.CurId(), err)
			continue
		}
		if key != "v1/Namespace" && obj.GetNamespace() != k8sNamespace {
			t.Errorf("%s %s is in namespace %q, want %q", key, obj.GetName(), obj.GetNamespace(), k8sNamespace)
		}
		r.objs = append(r.objs, obj)
	}
	return r
}

// Strict decoding is what makes the checks below worth anything: a
// misspelt field, a field at the wrong level, a bad quantity or an
// unknown kind must fail.
func TestDecodeObjectIsStrict(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field":        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 2}\n",
		"misplaced field":      "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: 80, path: /}]}\n",
		"kind not in the base": "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
		"wrong value type":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: 1}\n",
		"not a quantity":       "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {template: {spec: {containers: [{name: c, resources: {limits: {cpu: lots}}}]}}}\n",
		"wrong type":           "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec: {backoffLimit: ten}\n",
		"unknown kind":         "apiVersion: apps/v1\nkind: Deploymnet\nmetadata: {name: x}\n",
		"servicemonitor":       "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: x}\nspec: {selector: {}, endpoints: [{port: http, bearerToken: x}]}\n",
		"scaledobject field":   "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: x}\nspec: {scaleTargetRef: {name: d}, maxReplicas: 3, triggers: []}\n",
		"scaledobject value":   "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: x}\nspec: {scaleTargetRef: {name: d}, triggers: [{type: prometheus, metadata: {threshold: 10}}]}\n",
	} {
		if _, _, err := decodeObject([]byte(doc)); err == nil {
			t.Errorf("%s: decoded without error:\n%s", name, doc)
		}
	}
	ok := "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: x}\nspec: {scaleTargetRef: {name: d}, maxReplicaCount: 3, triggers: [{type: prometheus, metadata: {threshold: \"10\"}}]}\n"
	if _, _, err := decodeObject([]byte(ok)); err != nil {
		t.Errorf("a valid ScaledObject: %v", err)
	}
}

// Every Deployment runs rein non-root with probes, resources, the
// credentials from a Secret and flags rein has; each has a PDB, the
// NetworkPolicy covers its pods, and a Service names its metrics port.
func TestKubernetesManifests(t *testing.T) {
	r := render(t)
	names := map[string]bool{}
	for _, o := range r.objs {
		names[fmt.Sprintf("%T/%s", o, o.GetName())] = true
	}
	deps := of[*appsv1.Deployment](r)
	cms := map[string]*corev1.ConfigMap{}
	for _, cm := range of[*corev1.ConfigMap](r) {
		cms[cm.Name] = cm
	}
	components := map[string]bool{}
	modelCalls := 0
	for _, d := range deps {
		where := "Deployment " + d.Name
		tmpl := d.Spec.Template
		components[tmpl.Labels["app.kubernetes.io/component"]] = true
		if d.Spec.Selector == nil || !subset(d.Spec.Selector.MatchLabels, tmpl.Labels) {
			t.Errorf("%s: selector %v does not select its pods %v", where, d.Spec.Selector, tmpl.Labels)
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
			t.Errorf("%s: fewer than 2 replicas; a stage needs a standby", where)
		}
		ps := tmpl.Spec
		checkPodSecurity(t, where, ps)
		if len(ps.Containers) != 1 {
			t.Fatalf("%s: %d containers, want 1", where, len(ps.Containers))
		}
		checkContainer(t, where, ps, ps.Containers[0], names)
		checkNATSKeys(t, where, ps, ps.Containers[0], tmpl.Labels["app.kubernetes.io/component"])
		checkPodModel(t, where, ps.Containers[0], cms)
		if callsModel(ps.Containers[0].Args) {
			modelCalls++
		}
	}
	if modelCalls == 0 {
		t.Errorf("no Deployment calls a model: the agent worker runs in sidecar mode")
	}
	jobs := of[*batchv1.Job](r)
	if len(jobs) != 1 {
		t.Fatalf("%d Jobs, want rein-provision", len(jobs))
	}
	where := "Job " + jobs[0].Name
	ps := jobs[0].Spec.Template.Spec
	checkPodSecurity(t, where, ps)
	if p := ps.RestartPolicy; p != corev1.RestartPolicyOnFailure && p != corev1.RestartPolicyNever {
		t.Errorf("%s: restartPolicy %q; a Job's pods must be OnFailure or Never", where, p)
	}
	if len(ps.Containers) != 1 || len(ps.Containers[0].Args) == 0 || ps.Containers[0].Args[0] != "provision" {
		t.Fatalf("%s: want one container running rein provision", where)
	}
	checkArgs(t, where, ps.Containers[0].Args)
	checkNATSKeys(t, where, ps, ps.Containers[0], "provision")
	checkReadsConfig(t, where, ps, ps.Containers[0])
	if len(deps) < 5 {
		t.Errorf("%d Deployments; want one per stage and the ingress", len(deps))
	}
	for _, c := range []string{"ingress", "detector", "injector", "agentworker", "escalation"} {
		if !components[c] {
			t.Errorf("no Deployment for %s", c)
		}
	}
	var pdbSel, npSel []map[string]string
	for _, p := range of[*policyv1.PodDisruptionBudget](r) {
		if p.Spec.Selector != nil {
			pdbSel = append(pdbSel, p.Spec.Selector.MatchLabels)
		}
	}
	for _, np := range of[*networkingv1.NetworkPolicy](r) {
		npSel = append(npSel, np.Spec.PodSelector.MatchLabels)
		if np.Name == "rein" && (!slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)) {
			t.Errorf("NetworkPolicy rein must restrict both Ingress and Egress")
		}
	}
	pods := map[string]map[string]string{"Job " + jobs[0].Name: jobs[0].Spec.Template.Labels}
	for _, d := range deps {
		pods["Deployment "+d.Name] = d.Spec.Template.Labels
		if !slices.ContainsFunc(pdbSel, func(s map[string]string) bool { return subset(s, d.Spec.Template.Labels) }) {
			t.Errorf("no PodDisruptionBudget selects the pods of Deployment %s", d.Name)
		}
	}
	// The provision Job's pods reach NATS through the same policy.
	for w, labels := range pods {
		if !slices.ContainsFunc(npSel, func(s map[string]string) bool { return subset(s, labels) }) {
			t.Errorf("no NetworkPolicy selects the pods of %s", w)
		}
	}
	checkServices(t, deps, of[*corev1.Service](r))
	checkConfigMap(t, of[*corev1.ConfigMap](r))
}

func subset(sub, of map[string]string) bool {
	for k, v := range sub {
		if of[k] != v {
			return false
		}
	}
	return len(sub) > 0
}

func checkPodSecurity(t *testing.T, where string, ps corev1.PodSpec) {
	t.Helper()
	sc := ps.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
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
func checkNATSKeys(t *testing.T, where string, ps corev1.PodSpec, c corev1.Container, component string) {
	t.Helper()
	dir := ""
	for _, e := range c.Env {
		switch e.Name {
		case "REIN_NATS_PASSWORD", "REIN_NATS_USER", "REIN_NATS_TOKEN":
			t.Errorf("%s: %s: pods connect with their nkey identities, not a shared user", where, e.Name)
		case "REIN_NATS_KEYS_DIR":
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
	mounted := slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == keysVolume && m.MountPath == dir
	})
	if keysVolume == "" || !mounted {
		t.Errorf("%s: Secret %s is not mounted at REIN_NATS_KEYS_DIR %q", where, natsKeysSecret, dir)
	}
	want := []string{natsserver.IdentityAdmin}
	if component != "provision" {
		want = []string{natsserver.IdentityReader, component}
	}
	slices.Sort(items)
	slices.Sort(want)
	if !slices.Equal(items, want) {
		t.Errorf("%s mounts the seeds of %v; want exactly %v (items of Secret %s)", where, items, want, natsKeysSecret)
	}
}

func checkContainer(t *testing.T, where string, ps corev1.PodSpec, c corev1.Container, names map[string]bool) {
	t.Helper()
	ports := map[string]bool{}
	for _, p := range c.Ports {
		ports[p.Name] = true
	}
	for what, pr := range map[string]struct {
		p    *corev1.Probe
		path string
	}{"liveness": {c.LivenessProbe, "/healthz"}, "readiness": {c.ReadinessProbe, "/readyz"}, "startup": {c.StartupProbe, "/healthz"}} {
		if pr.p == nil || pr.p.HTTPGet == nil || pr.p.HTTPGet.Path != pr.path {
			t.Errorf("%s: %s probe must GET %s", where, what, pr.path)
			continue
		}
		if port := pr.p.HTTPGet.Port; port.Type == intstr.String && !ports[port.StrVal] {
			t.Errorf("%s: %s probe's port %q is not a container port", where, what, port.StrVal)
		}
	}
	// Liveness is held off until the start is over: the startup probe
	// must give it longer than liveness would.
	if sp, lp := c.StartupProbe, c.LivenessProbe; sp != nil && lp != nil && sp.PeriodSeconds*sp.FailureThreshold <= lp.PeriodSeconds*lp.FailureThreshold {
		t.Errorf("%s: the startup probe allows %ds, no more than liveness's %ds", where, sp.PeriodSeconds*sp.FailureThreshold, lp.PeriodSeconds*lp.FailureThreshold)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		if req.IsZero() || lim.IsZero() || req.Cmp(lim) > 0 {
			t.Errorf("%s: resources %s request %v and limit %v must both be set, the request at most the limit", where, r, &req, &lim)
		}
	}
	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil ||
		!*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("%s: container must forbid privilege escalation, mount its root read-only and drop ALL capabilities", where)
	}
	// kustomization.yaml's images entry gives the image its tag.
	if !strings.Contains(c.Image, ":") {
		t.Errorf("%s: image %q has no tag: kustomize's images entry did not apply", where, c.Image)
	}
	checkArgs(t, where, c.Args)
	if !slices.Contains(c.Args, "--stages") {
		t.Errorf("%s: no --stages: every Deployment runs its own stage", where)
	}
	checkReadsConfig(t, where, ps, c)
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
		if v.ConfigMap != nil && !names["*v1.ConfigMap/"+v.ConfigMap.Name] {
			t.Errorf("%s: volume %s mounts ConfigMap %s, which no manifest defines", where, v.Name, v.ConfigMap.Name)
		}
	}
	for _, m := range c.VolumeMounts {
		if !vols[m.Name] {
			t.Errorf("%s: mount of undeclared volume %s", where, m.Name)
		}
	}
}

// reinConfigPath is where every pod mounts the ConfigMap's rein.yaml.
const reinConfigPath = "/etc/rein/rein.yaml"

// checkReadsConfig checks that a pod reads the ConfigMap's rein.yaml, and
// that nothing overrides its partitions: the streams' partition count
// and the ScaledObjects' bound come from that one place.
func checkReadsConfig(t *testing.T, where string, ps corev1.PodSpec, c corev1.Container) {
	t.Helper()
	if i := slices.Index(c.Args, "--config"); i < 0 || i+1 >= len(c.Args) || c.Args[i+1] != reinConfigPath {
		t.Errorf("%s: does not read %s (--config)", where, reinConfigPath)
	}
	// A ConfigMap named *-config, or *-provision (the Helm chart's copy
	// for its provision hook, which runs before the release's objects
	// exist), holds rein.yaml.
	var vol string
	for _, v := range ps.Volumes {
		if v.ConfigMap != nil && (strings.HasSuffix(v.ConfigMap.Name, "-config") || strings.HasSuffix(v.ConfigMap.Name, "-provision")) {
			vol = v.Name
		}
	}
	if vol == "" || !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == vol && m.MountPath == filepath.Dir(reinConfigPath)
	}) {
		t.Errorf("%s: no rein.yaml ConfigMap is mounted at %s", where, filepath.Dir(reinConfigPath))
	}
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--partitions") {
			t.Errorf("%s: %s overrides rein.yaml's streams.partitions", where, a)
		}
	}
	for _, e := range c.Env {
		if e.Name == "REIN_PARTITIONS" {
			t.Errorf("%s: REIN_PARTITIONS overrides rein.yaml's streams.partitions", where)
		}
	}
}

// checkServices checks that a Service selects the pods of every
// Deployment and names their HTTP port, for the ServiceMonitor.
func checkServices(t *testing.T, deps []*appsv1.Deployment, svcs []*corev1.Service) {
	t.Helper()
	for _, d := range deps {
		found := false
		for _, s := range svcs {
			if !subset(s.Spec.Selector, d.Spec.Template.Labels) {
				continue
			}
			for _, p := range s.Spec.Ports {
				if p.Name == metricsPort && p.TargetPort == intstr.FromString("http") {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("no Service selects the pods of Deployment %s with a port %q to their container port http", d.Name, metricsPort)
		}
	}
}

// metricsPort is the Services' port the ServiceMonitor scrapes.
const metricsPort = "http"

// reinYAML decodes the ConfigMap's rein.yaml, with its streams section as
// rein reads it.
func reinYAML(t *testing.T, cms []*corev1.ConfigMap) (map[string]any, natsserver.ProvisionConfig) {
	t.Helper()
	i := slices.IndexFunc(cms, func(c *corev1.ConfigMap) bool { return c.Name == "rein-config" })
	if i < 0 {
		t.Fatalf("no ConfigMap rein-config")
	}
	src := cms[i].Data["rein.yaml"]
	var file map[string]any
	if err := yaml.Unmarshal([]byte(src), &file); err != nil || len(file) == 0 {
		t.Fatalf("ConfigMap rein.yaml: %v", err)
	}
	var sect struct {
		Streams natsserver.ProvisionConfig `yaml:"streams"`
	}
	if err := yaml.UnmarshalWithOptions([]byte(src), &sect, yaml.Strict()); err != nil {
		t.Fatalf("ConfigMap rein.yaml: streams: %v", err)
	}
	if err := sect.Streams.Validate(); err != nil {
		t.Fatalf("ConfigMap rein.yaml: %v", err)
	}
	return file, sect.Streams
}

// The ConfigMap's rein.yaml holds only flags of both rein serve and rein
// provision, and the sections rein reads; it splits the streams into
// partitions, so that replicas of a stage add throughput.
func checkConfigMap(t *testing.T, cms []*corev1.ConfigMap) {
	t.Helper()
	file, prov := reinYAML(t, cms)
	// The Deployments and the provision Job read it: rein provision
	// refuses a key that is not one of its flags.
	serve, provision := flagsOf(t, "serve"), flagsOf(t, "provision")
	for k := range file {
		if (!serve[k] || !provision[k]) && k != "streams" && k != "sinks" {
			t.Errorf("ConfigMap rein.yaml: %s is neither a flag of both rein serve and rein provision nor a section", k)
		}
	}
	if prov.Partitions < 2 {
		t.Errorf("ConfigMap rein.yaml: streams.partitions %d: with one partition a stage's replicas only stand by", prov.Partitions)
	}
}

// The ServiceMonitor scrapes /metrics on every Service of rein, on the
// port they all name, with a token from a Secret.
func TestServiceMonitor(t *testing.T) {
	checkServiceMonitor(t, render(t))
}

func checkServiceMonitor(t *testing.T, r rendered) {
	t.Helper()
	sms := of[*monitoringv1.ServiceMonitor](r)
	if len(sms) != 1 {
		t.Fatalf("%d ServiceMonitors, want 1", len(sms))
	}
	sm := sms[0]
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("ServiceMonitor %s: %d endpoints, want 1", sm.Name, len(sm.Spec.Endpoints))
	}
	ep := sm.Spec.Endpoints[0]
	if ep.Port != metricsPort || ep.Path != "/metrics" {
		t.Errorf("ServiceMonitor %s scrapes port %q path %q; want %q /metrics", sm.Name, ep.Port, ep.Path, metricsPort)
	}
	if err := ep.HTTPConfigWithProxyAndTLSFiles.Validate(); err != nil {
		t.Errorf("ServiceMonitor %s: %v", sm.Name, err)
	}
	// rein's /metrics on a non-loopback port needs a metrics token.
	if a := ep.Authorization; a == nil || a.Credentials == nil || a.Credentials.Name == "" || a.Credentials.Key == "" {
		t.Errorf("ServiceMonitor %s: no bearer token from a Secret (authorization.credentials)", sm.Name)
	}
	if len(sm.Spec.Selector.MatchExpressions) > 0 {
		t.Errorf("ServiceMonitor %s: use matchLabels only (the test checks them)", sm.Name)
	}
	if len(sm.Spec.NamespaceSelector.MatchNames) > 0 || sm.Spec.NamespaceSelector.Any {
		t.Errorf("ServiceMonitor %s: scrape its own namespace only", sm.Name)
	}
	selected := map[string]bool{}
	for _, s := range of[*corev1.Service](r) {
		if !subset(sm.Spec.Selector.MatchLabels, s.Labels) {
			continue
		}
		if !slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }) {
			t.Errorf("ServiceMonitor %s selects Service %s, which has no port %q", sm.Name, s.Name, ep.Port)
		}
		if c := s.Labels[sm.Spec.JobLabel]; sm.Spec.JobLabel != "" && c == "" {
			t.Errorf("Service %s has no %s label for the job", s.Name, sm.Spec.JobLabel)
		}
		selected[s.Spec.Selector["app.kubernetes.io/component"]] = true
	}
	for _, d := range of[*appsv1.Deployment](r) {
		if c := d.Spec.Template.Labels["app.kubernetes.io/component"]; !selected[c] {
			t.Errorf("ServiceMonitor %s scrapes no Service of Deployment %s", sm.Name, d.Name)
		}
	}
}

// partitionedStages are the Deployments whose stage has one durable per
// partition, with their durable and input stream: these scale on lag.
var partitionedStages = map[string]struct{ durable, stream string }{
	"rein-detector":    {bus.DurableDetector, bus.StreamTurns},
	"rein-agentworker": {bus.DurableAgentWorker, bus.StreamTasks},
}

// prometheusTriggerKeys are the metadata keys of KEDA's prometheus scaler.
var prometheusTriggerKeys = map[string]bool{
	"serverAddress": true, "query": true, "queryParameters": true, "threshold": true,
	"activationThreshold": true, "namespace": true, "customHeaders": true,
	"ignoreNullValues": true, "unsafeSsl": true, "timeout": true, "authModes": true,
}

var matcherRE = regexp.MustCompile(`([a-zA-Z_]+)\s*(=~|!=|!~|=)\s*"([^"]*)"`)

// labelMatchers reads the label matchers of a query's selectors.
func labelMatchers(query string) map[string][2]string {
	out := map[string][2]string{}
	for _, m := range matcherRE.FindAllStringSubmatch(query, -1) {
		out[m[1]] = [2]string{m[2], m[3]}
	}
	return out
}

// Each partitioned stage's Deployment is scaled by one ScaledObject on
// its consumers' lag: at least 2 replicas, at most the partitions, and a
// query that selects exactly the stage's durables of its input stream in
// rein's namespace. The escalation stage, not partitioned, is not scaled.
func TestScaledObjects(t *testing.T) {
	checkScaledObjects(t, render(t), "rein-")
}

// checkScaledObjects checks the ScaledObjects of r, whose Deployments'
// names start with prefix.
func checkScaledObjects(t *testing.T, r rendered, prefix string) {
	t.Helper()
	_, prov := reinYAML(t, of[*corev1.ConfigMap](r))
	deps := map[string]bool{}
	for _, d := range of[*appsv1.Deployment](r) {
		deps[d.Name] = true
	}
	scaled := map[string]int{}
	for _, so := range of[*scaledObject](r) {
		where := "ScaledObject " + so.Name
		ref := so.Spec.ScaleTargetRef
		scaled[ref.Name]++
		st, ok := partitionedStages["rein-"+strings.TrimPrefix(ref.Name, prefix)]
		if !ok || ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || !deps[ref.Name] {
			t.Errorf("%s scales %s %s; only the Deployments of the partitioned stages scale on lag", where, ref.Kind, ref.Name)
			continue
		}
		lo, hi := so.Spec.MinReplicaCount, so.Spec.MaxReplicaCount
		if lo == nil || *lo < 2 {
			t.Errorf("%s: minReplicaCount must be at least 2 (one standing by to take over)", where)
		}
		if hi == nil || int(*hi) > prov.Partitions || lo != nil && *hi < *lo {
			t.Errorf("%s: maxReplicaCount must be at least minReplicaCount and at most the streams' %d partitions (replicas past them only stand by)", where, prov.Partitions)
		}
		if so.Spec.IdleReplicaCount != nil {
			t.Errorf("%s: idleReplicaCount would leave the stage without a standby", where)
		}
		if len(so.Spec.Triggers) != 1 {
			t.Errorf("%s: %d triggers, want the stage's total lag alone", where, len(so.Spec.Triggers))
			continue
		}
		checkLagTrigger(t, where, so.Spec.Triggers[0], st.durable, st.stream, prov.Partitions)
	}
	for name := range partitionedStages {
		name = prefix + strings.TrimPrefix(name, "rein-")
		if scaled[name] != 1 {
			t.Errorf("Deployment %s has %d ScaledObjects, want 1", name, scaled[name])
		}
	}
}

// checkLagTrigger checks a Prometheus trigger on a stage's lag.
func checkLagTrigger(t *testing.T, where string, tr kedaTrigger, durable, stream string, partitions int) {
	t.Helper()
	if tr.Type != "prometheus" || tr.MetricType != autoscalingv2.AverageValueMetricType {
		t.Errorf("%s: trigger %s/%s; want prometheus with AverageValue (replicas = lag / threshold)", where, tr.Type, tr.MetricType)
	}
	for k := range tr.Metadata {
		if !prometheusTriggerKeys[k] {
			t.Errorf("%s: %q is not a metadata key of KEDA's prometheus scaler", where, k)
		}
	}
	if th, err := strconv.ParseFloat(tr.Metadata["threshold"], 64); err != nil || th <= 0 {
		t.Errorf("%s: threshold %q must be a positive number", where, tr.Metadata["threshold"])
	}
	if !strings.HasPrefix(tr.Metadata["serverAddress"], "http") {
		t.Errorf("%s: serverAddress %q is not a URL", where, tr.Metadata["serverAddress"])
	}
	if tr.Metadata["ignoreNullValues"] != "false" {
		t.Errorf("%s: ignoreNullValues must be \"false\": an empty answer (targets lost) is not zero lag", where)
	}
	q := tr.Metadata["query"]
	if refs := metricRefs(q); !slices.Equal(refs, []string{"rein_consumer_pending_messages"}) {
		t.Errorf("%s: query reads %v; want rein_consumer_pending_messages", where, refs)
	}
	m := labelMatchers(q)
	if m["namespace"] != [2]string{"=", k8sNamespace} || m["stream"] != [2]string{"=", stream} || m["consumer"][0] != "=~" {
		t.Errorf("%s: query %s must select namespace=%q, stream=%q and consumer=~ the stage's durables", where, q, k8sNamespace, stream)
		return
	}
	re, err := regexp.Compile("^(?:" + m["consumer"][1] + ")$")
	if err != nil {
		t.Fatalf("%s: consumer matcher: %v", where, err)
	}
	// The stage's durable, unpartitioned and in every partition, and no
	// other stage's durable on any partition.
	for _, d := range []string{bus.DurableDetector, bus.DurableInjector, bus.DurableAgentWorker, bus.DurableEscalation, bus.DurableHandoffDesktops} {
		for p := -1; p < streams.MaxPartitions; p++ {
			name := d
			if p >= 0 {
				name = streams.PartitionDurable(d, p)
			}
			if d == durable && p >= partitions {
				continue // no such durable; matching it is harmless
			}
			if want := d == durable; re.MatchString(name) != want {
				t.Errorf("%s: consumer matcher %q matches %s: %v, want %v", where, m["consumer"][1], name, !want, want)
			}
		}
	}
}

// Each ScaledObject's query, run by promtool on the series two scraped
// replicas of rein export, counts every partition durable's lag once:
// the sum over the stage's partitions, not that sum once per replica, and
// nothing of other stages or namespaces.
func TestScaledObjectQueriesSumTheStagesLag(t *testing.T) {
	promtool(t) // skip early when absent
	r := render(t)
	_, prov := reinYAML(t, of[*corev1.ConfigMap](r))
	var rules []map[string]string
	var tests []map[string]any
	var series []map[string]string
	durables := map[string]string{}
	for _, st := range partitionedStages {
		durables[st.durable] = st.stream
	}
	// Every durable of every partitioned stage, partition p lagging by
	// 10*(p+1) + the stage's offset, as both replicas a and b export it,
	// and the same consumers in another namespace lagging by 1000.
	want := map[string]int{}
	for i, d := range []string{bus.DurableDetector, bus.DurableAgentWorker} {
		for p := range prov.Partitions {
			lag := 10*(p+1) + i
			want[d] += lag
			for _, lbl := range []string{`namespace="rein",pod="a"`, `namespace="rein",pod="b"`, `namespace="other",pod="c"`} {
				v := lag
				if strings.Contains(lbl, "other") {
					v = 1000
				}
				series = append(series, map[string]string{
					"series": fmt.Sprintf(`rein_consumer_pending_messages{%s,stream=%q,consumer=%q}`, lbl, durables[d], streams.PartitionDurable(d, p)),
					"values": fmt.Sprintf("%dx5", v),
				})
			}
		}
	}
	for _, so := range of[*scaledObject](r) {
		st, ok := partitionedStages[so.Spec.ScaleTargetRef.Name]
		if !ok || len(so.Spec.Triggers) == 0 {
			continue
		}
		rec := fmt.Sprintf("keda:%s_lag:check", st.durable)
		rules = append(rules, map[string]string{"record": rec, "expr": so.Spec.Triggers[0].Metadata["query"]})
		tests = append(tests, map[string]any{
			"expr": rec, "eval_time": "2m",
			"exp_samples": []map[string]any{{"labels": rec, "value": want[st.durable]}},
		})
	}
	if len(rules) != len(partitionedStages) {
		t.Fatalf("%d ScaledObject queries, want %d", len(rules), len(partitionedStages))
	}
	dir := t.TempDir()
	writeYAML(t, filepath.Join(dir, "keda_rules.yml"), map[string]any{"groups": []any{map[string]any{"name": "keda", "rules": rules}}})
	writeYAML(t, filepath.Join(dir, "keda_test.yml"), map[string]any{
		"rule_files":          []string{"keda_rules.yml"},
		"evaluation_interval": "1m",
		"tests":               []any{map[string]any{"interval": "1m", "input_series": series, "promql_expr_test": tests}},
	})
	runPromtool(t, "test", "rules", filepath.Join(dir, "keda_test.yml"))
}

func writeYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
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

// Every Secret a pod or the ServiceMonitor reads is one kustomization.yaml
// says how to create: the base ships none.
func TestKubernetesSecretsAreDocumented(t *testing.T) {
	r := render(t)
	b, err := os.ReadFile(filepath.Join(k8sDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var secrets []string
	for _, d := range of[*appsv1.Deployment](r) {
		secrets = append(secrets, podSecrets(d.Spec.Template.Spec)...)
	}
	for _, j := range of[*batchv1.Job](r) {
		secrets = append(secrets, podSecrets(j.Spec.Template.Spec)...)
	}
	for _, sm := range of[*monitoringv1.ServiceMonitor](r) {
		for _, ep := range sm.Spec.Endpoints {
			if a := ep.Authorization; a != nil && a.Credentials != nil {
				secrets = append(secrets, a.Credentials.Name)
			}
		}
	}
	if !slices.Contains(secrets, "rein-llm") {
		t.Errorf("no pod reads the model's key from Secret rein-llm")
	}
	for _, name := range secrets {
		if !regexp.MustCompile(`(?m)^#.*create secret generic ` + regexp.QuoteMeta(name) + `\b`).Match(b) {
			t.Errorf("Secret %s is read but kustomization.yaml does not say how to create it", name)
		}
	}
}

// The TLS overlay is the base plus one Ingress, checked as the chart's is.
func TestKustomizeTLSOverlay(t *testing.T) {
	base, tls := render(t), renderDir(t, "k8s-tls")
	if len(tls.objs) != len(base.objs)+1 {
		t.Errorf("the overlay renders %d objects, want the base's %d and an Ingress", len(tls.objs), len(base.objs))
	}
	if len(of[*networkingv1.Ingress](base)) != 0 {
		t.Errorf("the base has an Ingress; it belongs to the overlay")
	}
	ing := checkIngress(t, "kustomize", tls, "rein.example.com")
	if ing.Spec.TLS[0].SecretName != "rein-tls" {
		t.Errorf("the overlay's certificate is %q, want rein-tls as its kustomization.yaml creates it", ing.Spec.TLS[0].SecretName)
	}
}

// checkIngress: one Ingress, with TLS for its one host, sending every
// path to the ingress Service's http port (the only pods that take
// traffic).
func checkIngress(t *testing.T, where string, r rendered, host string) *networkingv1.Ingress {
	t.Helper()
	ings := of[*networkingv1.Ingress](r)
	if len(ings) != 1 {
		t.Fatalf("%s: %d Ingresses, want 1", where, len(ings))
	}
	ing := ings[0]
	where += " Ingress " + ing.Name
	if len(ing.Spec.TLS) != 1 || !slices.Equal(ing.Spec.TLS[0].Hosts, []string{host}) || ing.Spec.TLS[0].SecretName == "" {
		t.Fatalf("%s: TLS %+v, want the host %s with a certificate", where, ing.Spec.TLS, host)
	}
	var svc *corev1.Service
	for _, s := range of[*corev1.Service](r) {
		if s.Labels["app.kubernetes.io/component"] == "ingress" {
			svc = s
		}
	}
	if svc == nil {
		t.Fatalf("%s: no ingress Service to send to", where)
	}
	if len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].Host != host || ing.Spec.Rules[0].HTTP == nil || len(ing.Spec.Rules[0].HTTP.Paths) == 0 {
		t.Fatalf("%s: rules %+v, want one for %s", where, ing.Spec.Rules, host)
	}
	for _, p := range ing.Spec.Rules[0].HTTP.Paths {
		b := p.Backend.Service
		if p.Path != "/" || b == nil || b.Name != svc.Name || b.Port.Name != metricsPort {
			t.Errorf("%s: path %q goes to %+v, want / to Service %s port %s", where, p.Path, b, svc.Name, metricsPort)
		}
	}
	return ing
}
