package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/reinception/rein/internal/llm"
)

// helmChart is rein's Helm chart.
const helmChart = "helm/rein"

// helm returns the helm binary; without one the test skips, unless
// REIN_REQUIRE_HELM=1 (set by .ci/run) says it must run.
func helm(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("helm")
	if err != nil {
		if os.Getenv("REIN_REQUIRE_HELM") == "1" {
			t.Fatal("helm not on PATH, and REIN_REQUIRE_HELM=1 says the chart tests must run (go install helm.sh/helm/v3/cmd/helm@v3.21.4)")
		}
		t.Skip("helm not on PATH; install it to lint and render the chart (REIN_REQUIRE_HELM=1 makes this a failure)")
	}
	return p
}

func runHelm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), helm(t), args...)
	// No repositories, plugins or cache of the user's: the chart alone.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, &buildError{err, stderr.String()}
	}
	return out, nil
}

// helmToggles turns every optional part of the chart on, sets the
// values the checks follow, and uses the model for inception too.
const helmToggles = `
serviceMonitor: {enabled: true}
keda: {enabled: true}
networkPolicy: {enabled: true, egressPorts: [443, 11434]}
podDisruptionBudget: {enabled: true}
ingress: {enabled: true, className: nginx, host: rein.acme.test, annotations: {cert-manager.io/cluster-issuer: acme-issuer}, tls: {secretName: acme-rein-tls}}
inception: {module: cascade}
model: {provider: openai, name: qwen2.5:1.5b, baseURL: "http://ollama.models.svc:11434/v1", apiKey: {existingSecret: my-model-key, key: token}}
stages:
  injector: {replicas: 3, resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {cpu: "1", memory: 512Mi}}}
  escalation: {replicas: 4, resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {cpu: "1", memory: 512Mi}}}
streams:
  defaults: {replicas: 3, duplicates: 2m}
  partitions: 6
  kv_replicas: 3
  streams:
    REIN_TURNS: {max_age: 240h}
`

// renderChart lints the chart and renders it with helm template as
// release rein in namespace rein, with extra values when given, and
// decodes every object strictly, as render does the kustomize base.
func renderChart(t *testing.T, values string) (rendered, []byte) {
	t.Helper()
	args := []string{}
	if values != "" {
		f := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(f, []byte(values), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-f", f)
	}
	if out, err := runHelm(t, append([]string{"lint", "--strict", helmChart}, args...)...); err != nil {
		t.Fatalf("helm lint %v: %v\n%s", args, err, out)
	}
	out, err := runHelm(t, append([]string{"template", k8sNamespace, helmChart, "--namespace", k8sNamespace}, args...)...)
	if err != nil {
		t.Fatalf("helm template %v: %v", args, err)
	}
	var r rendered
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(out), -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(doc, "")) == "" {
			continue
		}
		obj, key, err := decodeObject([]byte(doc))
		if err != nil {
			t.Errorf("helm template: %v\n%s", err, doc)
			continue
		}
		if key != "v1/Namespace" && obj.GetNamespace() != "" && obj.GetNamespace() != k8sNamespace {
			t.Errorf("%s %s in namespace %q", key, obj.GetName(), obj.GetNamespace())
		}
		r.objs = append(r.objs, obj)
	}
	return r, out
}

// The chart lints and renders, with its defaults and with every toggle
// on: a Deployment per stage running `rein serve --stages <stage>` with
// the replicas asked, the same pod checks as the kustomize base (probes
// with a startup probe, resources, security, NATS seeds, flags rein has),
// the model's settings from its ConfigMap and its key from the Secret
// named in the values, rein.yaml's streams section from the values, the
// provision Job as a hook before the stages, only Secrets the values
// name, none rendered, and no literal key; the toggles add the
// ServiceMonitor, the ScaledObjects, NetworkPolicies and PDBs.
func TestHelmChart(t *testing.T) {
	helm(t)
	for _, tc := range []struct {
		name, values string
		toggles      bool
	}{{"defaults", "", false}, {"every toggle on", helmToggles, true}} {
		t.Run(tc.name, func(t *testing.T) {
			r, out := renderChart(t, tc.values)
			if m := literalKey.Find(out); m != nil {
				t.Errorf("rendered chart holds a literal key: %q", m)
			}
			checkHelmObjects(t, r, tc.toggles)
		})
	}
}

func checkHelmObjects(t *testing.T, r rendered, toggles bool) {
	t.Helper()
	names := map[string]bool{}
	cms := map[string]*corev1.ConfigMap{}
	// A rendered Secret has already failed decodeObject, which knows no
	// Secret type: the chart references secrets, never makes them.
	for _, o := range r.objs {
		if cm, ok := o.(*corev1.ConfigMap); ok {
			cms[cm.Name] = cm
			names["*v1.ConfigMap/"+cm.Name] = true
		}
	}
	wantSecrets := map[string]bool{"rein-nats-keys": true, "rein-http-tokens": true, "rein-task-key": true, "rein-llm": true}
	if toggles {
		wantSecrets["rein-llm"] = false
		wantSecrets["my-model-key"] = true
		wantSecrets["rein-metrics-token"] = true
		wantSecrets["acme-rein-tls"] = true
	}
	replicas := map[string]int32{"ingress": 2, "detector": 2, "injector": 2, "agentworker": 2, "escalation": 2}
	if toggles {
		// Not scaled by KEDA (the injector has no consumer): the values'.
		replicas["injector"], replicas["escalation"] = 3, 4
	}
	stages := map[string]bool{}
	var secrets []string
	for _, d := range of[*appsv1.Deployment](r) {
		where := "helm Deployment " + d.Name
		ps := d.Spec.Template.Spec
		component := d.Spec.Template.Labels["app.kubernetes.io/component"]
		if len(ps.Containers) != 1 {
			t.Fatalf("%s: %d containers, want 1", where, len(ps.Containers))
		}
		c := ps.Containers[0]
		stage := component
		if stage == "ingress" {
			stage = "none"
		}
		if len(c.Args) < 3 || !slices.Equal(c.Args[:3], []string{"serve", "--stages", stage}) {
			t.Errorf("%s runs %v, want rein serve --stages %s", where, c.Args, stage)
		}
		stages[component] = true
		// With KEDA the HPA owns the partitioned stages' replicas.
		want, scaled := replicas[component], toggles && partitionedStages["rein-"+component].durable != ""
		switch {
		case scaled && d.Spec.Replicas != nil:
			t.Errorf("%s: replicas %d set although KEDA owns them", where, *d.Spec.Replicas)
		case !scaled && (d.Spec.Replicas == nil || *d.Spec.Replicas != want):
			t.Errorf("%s: replicas %v, want %d from the values", where, d.Spec.Replicas, want)
		}
		checkPodSecurity(t, where, ps)
		checkContainer(t, where, ps, c, names)
		checkNATSKeys(t, where, ps, c, component)
		checkPodModel(t, where, c, cms)
		calls := callsModel(c.Args)
		if wantCalls := component == "agentworker" || toggles && component == "detector"; calls != wantCalls {
			t.Errorf("%s calls a model: %v, want %v", where, calls, wantCalls)
		}
		if calls {
			env := map[string]string{}
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
					env[e.Name] = cms[e.ValueFrom.ConfigMapKeyRef.Name].Data[e.ValueFrom.ConfigMapKeyRef.Key]
				}
				if e.Name == llm.EnvAPIKey && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					env[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
				}
			}
			wantKey, wantModel := "rein-llm/api-key", "gpt-4o-mini"
			if toggles {
				wantKey, wantModel = "my-model-key/token", "qwen2.5:1.5b"
			}
			if env[llm.EnvAPIKey] != wantKey || env[llm.EnvModel] != wantModel {
				t.Errorf("%s: key from %q and model %q; want the values' %s and %s", where, env[llm.EnvAPIKey], env[llm.EnvModel], wantKey, wantModel)
			}
		} else if slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == llm.EnvAPIKey }) {
			t.Errorf("%s calls no model but gets its key", where)
		}
		secrets = append(secrets, podSecrets(ps)...)
	}
	for c := range replicas {
		if !stages[c] {
			t.Errorf("the chart has no Deployment for %s", c)
		}
	}
	jobs := of[*batchv1.Job](r)
	if len(jobs) != 1 {
		t.Fatalf("%d Jobs, want the provision Job", len(jobs))
	}
	job := jobs[0]
	ps := job.Spec.Template.Spec
	checkPodSecurity(t, "helm Job", ps)
	if len(ps.Containers) != 1 || len(ps.Containers[0].Args) == 0 || ps.Containers[0].Args[0] != "provision" {
		t.Fatalf("helm Job %s: want one container running rein provision", job.Name)
	}
	checkArgs(t, "helm Job", ps.Containers[0].Args)
	checkNATSKeys(t, "helm Job", ps, ps.Containers[0], "provision")
	checkReadsConfig(t, "helm Job", ps, ps.Containers[0])
	secrets = append(secrets, podSecrets(ps)...)
	// A hook: helm creates the stage Deployments once it has completed,
	// so they never start before the streams exist; its ConfigMap is a
	// hook that comes first, with the same rein.yaml.
	if !strings.Contains(job.Annotations["helm.sh/hook"], "pre-install") || !strings.Contains(job.Annotations["helm.sh/hook"], "pre-upgrade") {
		t.Errorf("helm Job %s is not a pre-install/pre-upgrade hook: %v", job.Name, job.Annotations)
	}
	for _, v := range ps.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		cm := cms[v.ConfigMap.Name]
		if cm == nil || cm.Annotations["helm.sh/hook"] != job.Annotations["helm.sh/hook"] || cm.Annotations["helm.sh/hook-weight"] >= job.Annotations["helm.sh/hook-weight"] {
			t.Errorf("helm Job %s reads ConfigMap %s, which is not a hook made before it", job.Name, v.ConfigMap.Name)
		} else if cm.Data["rein.yaml"] != cms["rein-config"].Data["rein.yaml"] {
			t.Errorf("the provision hook's rein.yaml differs from the pods':\n%s\n%s", cm.Data["rein.yaml"], cms["rein-config"].Data["rein.yaml"])
		}
	}
	_, prov := reinYAML(t, of[*corev1.ConfigMap](r))
	if toggles && (prov.Partitions != 6 || prov.Streams["REIN_TURNS"].MaxAge.String() != "240h0m0s") {
		t.Errorf("rein.yaml's streams section is not the values' (partitions %d, REIN_TURNS %+v)", prov.Partitions, prov.Streams["REIN_TURNS"])
	}
	sms := of[*monitoringv1.ServiceMonitor](r)
	for _, sm := range sms {
		for _, ep := range sm.Spec.Endpoints {
			if a := ep.Authorization; a != nil && a.Credentials != nil {
				secrets = append(secrets, a.Credentials.Name)
			}
		}
	}
	secrets = append(secrets, checkHelmIngress(t, r, toggles)...)
	got := map[string]bool{}
	for _, s := range secrets {
		got[s] = true
	}
	for s, want := range wantSecrets {
		if got[s] != want {
			t.Errorf("Secret %s referenced: %v, want %v", s, got[s], want)
		}
	}
	for s := range got {
		if _, ok := wantSecrets[s]; !ok {
			t.Errorf("Secret %s is referenced but no value names it", s)
		}
	}
	checkServices(t, of[*appsv1.Deployment](r), of[*corev1.Service](r))
	scaled := of[*scaledObject](r)
	if !toggles {
		if len(sms)+len(scaled) > 0 {
			t.Errorf("ServiceMonitor and ScaledObjects are rendered by default; they need CRDs and must be asked for")
		}
		if n := len(of[*networkingv1.NetworkPolicy](r)); n == 0 {
			t.Errorf("no NetworkPolicy by default")
		}
		return
	}
	checkServiceMonitor(t, r)
	checkScaledObjects(t, r, "rein-")
	var npSel, pdbSel []map[string]string
	egress11434 := false
	for _, np := range of[*networkingv1.NetworkPolicy](r) {
		npSel = append(npSel, np.Spec.PodSelector.MatchLabels)
		for _, e := range np.Spec.Egress {
			for _, p := range e.Ports {
				if p.Port != nil && p.Port.IntValue() == 11434 {
					egress11434 = true
				}
			}
		}
	}
	if !egress11434 {
		t.Errorf("networkPolicy.egressPorts does not reach the NetworkPolicy")
	}
	for _, p := range of[*policyv1.PodDisruptionBudget](r) {
		pdbSel = append(pdbSel, p.Spec.Selector.MatchLabels)
	}
	for _, d := range of[*appsv1.Deployment](r) {
		labels := d.Spec.Template.Labels
		if !slices.ContainsFunc(npSel, func(s map[string]string) bool { return subset(s, labels) }) {
			t.Errorf("no NetworkPolicy selects the pods of %s", d.Name)
		}
		if !slices.ContainsFunc(pdbSel, func(s map[string]string) bool { return subset(s, labels) }) {
			t.Errorf("no PodDisruptionBudget selects the pods of %s", d.Name)
		}
	}
}

// checkHelmIngress: no Ingress unless asked for; asked for, the one of
// checkIngress with the values' class and annotations. It returns the
// TLS Secret it references.
func checkHelmIngress(t *testing.T, r rendered, toggles bool) []string {
	t.Helper()
	ings := of[*networkingv1.Ingress](r)
	if !toggles {
		if len(ings) > 0 {
			t.Errorf("an Ingress is rendered by default; it needs a controller, a host and a certificate and must be asked for")
		}
		return nil
	}
	ing := checkIngress(t, "helm", r, "rein.acme.test")
	if ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != "nginx" || ing.Annotations["cert-manager.io/cluster-issuer"] != "acme-issuer" {
		t.Errorf("helm Ingress %s: class %v and annotations %v are not the values'", ing.Name, ing.Spec.IngressClassName, ing.Annotations)
	}
	return []string{ing.Spec.TLS[0].SecretName}
}

// values.schema.json refuses values the chart cannot run with, naming them.
func TestHelmValuesSchema(t *testing.T) {
	helm(t)
	for _, set := range []string{
		"stages.detector.replicas=two",
		"inception.module=magic",
		"model.provider=gpt",
		"nats.url=http://nats:4222",
		"keda.minReplicas=1",
		"streams.partitions=17",
		"ingress.host=Not A Host",
		"unknownKey=1",
	} {
		out, err := runHelm(t, "template", k8sNamespace, helmChart, "--set", set)
		if err == nil {
			t.Errorf("helm template --set %s renders:\n%.300s", set, out)
			continue
		}
		key, _, _ := strings.Cut(set, "=")
		if !strings.Contains(err.Error(), "schema") || !strings.Contains(err.Error(), strings.ReplaceAll(strings.Split(key, ".")[len(strings.Split(key, "."))-1], ".", "/")) {
			t.Errorf("helm template --set %s: the error does not name the value: %v", set, err)
		}
	}
}
