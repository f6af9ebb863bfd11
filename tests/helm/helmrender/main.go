// helmrender: renders a Helm chart the way `helm template` does, without Helm.
//
// Helm is not packaged in Debian, so the render test uses the engine Helm is
// built on: Go text/template with the sprig function library, plus Helm's own
// template functions (include, tpl, required, toYaml, fromYaml, toJson,
// fromJson, lookup) and built-in objects (.Values, .Release, .Chart,
// .Capabilities, .Template, .Files).  Behaviour copied from Helm 3's engine:
//
//   - every file under templates/ is parsed into one template set named
//     "<chart>/templates/<file>", so include can reach any define;
//   - files whose base name starts with "_" are partials and are not output,
//     NOTES.txt is output only with -notes;
//   - option missingkey=zero, then "<no value>" is replaced by "";
//   - values: values.yaml deep-merged with each -f file in order, a null in an
//     override deletes the key; numbers are float64 (YAML -> JSON -> Go), as
//     Helm's sigs.k8s.io/yaml does;
//   - toYaml marshals through JSON and then yaml.v2, trailing newline trimmed;
//   - the chart's kubeVersion constraint is checked against -kube-version;
//   - output: "---\n# Source: <name>\n<text>" per non-blank rendered file.
//
// Second mode, "helmrender yaml2json FILE...": parses each (multi-document)
// YAML file strictly with yaml.v3 (duplicate keys are errors) and prints a
// JSON array of all non-empty documents, for the Python checker.
//
// Built offline from Debian's packaged Go sources (see build.sh).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/semver/v3"
	"github.com/Masterminds/sprig/v3"
	yaml2 "gopkg.in/yaml.v2"
	yaml3 "gopkg.in/yaml.v3"
)

type chartMeta struct {
	APIVersion  string
	Name        string
	Version     string
	AppVersion  string
	KubeVersion string
	Description string
	Type        string
	Home        string
	Keywords    []string
}

type kubeVersion struct {
	Version    string
	Major      string
	Minor      string
	GitVersion string
}

func (k kubeVersion) String() string { return k.Version }

type apiVersions []string

// Has mirrors Helm's Capabilities.APIVersions.Has: "group/version" or
// "group/version/Kind".
func (a apiVersions) Has(v string) bool {
	for _, x := range a {
		if x == v {
			return true
		}
	}
	return false
}

type capabilities struct {
	KubeVersion kubeVersion
	APIVersions apiVersions
	HelmVersion map[string]string
}

type release struct {
	Name      string
	Namespace string
	Service   string
	IsInstall bool
	IsUpgrade bool
	Revision  int
}

type files map[string][]byte

func (f files) Get(name string) string { return string(f[name]) }
func (f files) GetBytes(name string) []byte {
	return f[name]
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// yamlToJSONish parses YAML into the shapes Helm sees: map[string]interface{},
// []interface{}, float64, string, bool, nil.
func yamlToJSONish(data []byte) (interface{}, error) {
	var v interface{}
	if err := yaml3.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	if v == nil {
		return map[string]interface{}{}, nil
	}
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out interface{}
	if err := json.Unmarshal(j, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func loadValues(file string) (map[string]interface{}, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	v, err := yamlToJSONish(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	m, ok := v.(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("%s: top level is not a mapping", file)
	}
	return m, nil
}

// merge overlays src onto dst like Helm's coalescing of user values over
// chart defaults: maps merge recursively, anything else replaces, null
// deletes.
func merge(dst, src map[string]interface{}) {
	for k, sv := range src {
		if sv == nil {
			delete(dst, k)
			continue
		}
		sm, sok := sv.(map[string]interface{})
		dm, dok := dst[k].(map[string]interface{})
		if sok && dok {
			merge(dm, sm)
			continue
		}
		dst[k] = sv
	}
}

func toYAML(v interface{}) string {
	j, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	var ms yaml2.MapSlice
	var generic interface{}
	var out []byte
	if len(j) > 0 && j[0] == '{' {
		if err := yaml2.Unmarshal(j, &ms); err != nil {
			return ""
		}
		out, err = yaml2.Marshal(ms)
	} else {
		if err := yaml2.Unmarshal(j, &generic); err != nil {
			return ""
		}
		out, err = yaml2.Marshal(generic)
	}
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(out), "\n")
}

func fromYAML(s string) map[string]interface{} {
	v, err := yamlToJSONish([]byte(s))
	if err != nil {
		return map[string]interface{}{"Error": err.Error()}
	}
	m, ok := v.(map[string]interface{})
	if !ok {
		return map[string]interface{}{"Error": "not a mapping"}
	}
	return m
}

func toJSON(v interface{}) string {
	j, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(j)
}

func fromJSON(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

type renderer struct {
	tpl      *template.Template
	chart    string
	top      map[string]interface{}
	includes map[string]int
}

func (r *renderer) funcs() template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	f["toYaml"] = toYAML
	f["fromYaml"] = fromYAML
	f["toJson"] = toJSON
	f["fromJson"] = fromJSON
	f["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return v, errors.New(msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return v, errors.New(msg)
		}
		return v, nil
	}
	f["lookup"] = func(apiVersion, kind, ns, name string) (map[string]interface{}, error) {
		return map[string]interface{}{}, nil
	}
	f["include"] = func(name string, data interface{}) (string, error) {
		r.includes[name]++
		defer func() { r.includes[name]-- }()
		if r.includes[name] > 1000 {
			return "", fmt.Errorf("rendering template has a nested reference name: %s", name)
		}
		var buf bytes.Buffer
		if err := r.tpl.ExecuteTemplate(&buf, name, data); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	f["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := r.tpl.Clone()
		if err != nil {
			return "", err
		}
		t, err = t.New("tpl").Parse(text)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, data); err != nil {
			return "", err
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	return f
}

func parseKubeVersion(v string) (kubeVersion, error) {
	s := strings.TrimPrefix(v, "v")
	parts := strings.SplitN(s, ".", 3)
	if len(parts) < 2 {
		return kubeVersion{}, fmt.Errorf("bad kube version %q", v)
	}
	for _, p := range parts[:2] {
		if _, err := strconv.Atoi(p); err != nil {
			return kubeVersion{}, fmt.Errorf("bad kube version %q", v)
		}
	}
	return kubeVersion{Version: "v" + s, Major: parts[0], Minor: parts[1], GitVersion: "v" + s}, nil
}

func render(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("helmrender", flag.ContinueOnError)
	var valueFiles multiFlag
	fs.Var(&valueFiles, "f", "values file (repeatable, later wins)")
	name := fs.String("name", "objfs", "release name")
	ns := fs.String("namespace", "default", "release namespace")
	kv := fs.String("kube-version", "v1.34.0", "Capabilities.KubeVersion")
	notes := fs.Bool("notes", false, "render NOTES.txt instead of the manifests")
	upgrade := fs.Bool("upgrade", false, "render as an upgrade (Release.IsUpgrade, Revision 2)")
	var apis multiFlag
	fs.Var(&apis, "api-versions", "extra Capabilities.APIVersions entry (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: helmrender [-f values.yaml]... [-name N] [-namespace NS] [-kube-version vX.Y.Z] [-notes] [-upgrade] CHARTDIR")
	}
	dir := fs.Arg(0)

	metaRaw, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return err
	}
	var meta chartMeta
	var metaMap map[string]interface{}
	if err := yaml3.Unmarshal(metaRaw, &metaMap); err != nil {
		return fmt.Errorf("Chart.yaml: %w", err)
	}
	str := func(k string) string {
		if s, ok := metaMap[k].(string); ok {
			return s
		}
		return ""
	}
	meta = chartMeta{APIVersion: str("apiVersion"), Name: str("name"), Version: str("version"),
		AppVersion: str("appVersion"), KubeVersion: str("kubeVersion"),
		Description: str("description"), Type: str("type"), Home: str("home")}
	if meta.APIVersion != "v2" || meta.Name == "" || meta.Version == "" {
		return errors.New("Chart.yaml: apiVersion v2, name and version are required")
	}

	values, err := loadValues(filepath.Join(dir, "values.yaml"))
	if err != nil {
		return err
	}
	for _, vf := range valueFiles {
		o, err := loadValues(vf)
		if err != nil {
			return err
		}
		merge(values, o)
	}

	kver, err := parseKubeVersion(*kv)
	if err != nil {
		return err
	}
	// Like Helm: refuse a cluster outside the chart's kubeVersion range.
	if meta.KubeVersion != "" {
		c, err := semver.NewConstraint(meta.KubeVersion)
		if err != nil {
			return fmt.Errorf("Chart.yaml: kubeVersion %q: %w", meta.KubeVersion, err)
		}
		v, err := semver.NewVersion(kver.Version)
		if err != nil {
			return err
		}
		if !c.Check(v) {
			return fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s",
				meta.KubeVersion, kver.Version)
		}
	}
	caps := capabilities{KubeVersion: kver, HelmVersion: map[string]string{"Version": "v3.16.0"},
		APIVersions: apiVersions(append([]string{
			"v1", "apps/v1", "rbac.authorization.k8s.io/v1", "storage.k8s.io/v1",
			"storage.k8s.io/v1/CSIDriver", "storage.k8s.io/v1/StorageClass",
			"snapshot.storage.k8s.io/v1", "snapshot.storage.k8s.io/v1/VolumeSnapshotClass",
			"scheduling.k8s.io/v1", "policy/v1", "coordination.k8s.io/v1",
		}, apis...))}

	// Chart files (for .Files.Get): everything but templates/ and Chart.yaml/values.yaml.
	chartFiles := files{}
	tfiles := map[string]string{}
	err = filepath.Walk(dir, func(p string, info os.FileInfo, werr error) error {
		if werr != nil {
			return werr
		}
		if info.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasPrefix(rel, "templates/") {
			tfiles[path.Join(meta.Name, rel)] = string(data)
		} else if rel != "Chart.yaml" && rel != "values.yaml" {
			chartFiles[rel] = data
		}
		return nil
	})
	if err != nil {
		return err
	}

	r := &renderer{chart: meta.Name, includes: map[string]int{}}
	r.tpl = template.New("gotpl").Option("missingkey=zero")
	r.tpl.Funcs(r.funcs())
	names := make([]string, 0, len(tfiles))
	for n := range tfiles {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := r.tpl.New(n).Parse(tfiles[n]); err != nil {
			return fmt.Errorf("parse error: %w", err)
		}
	}

	for _, n := range names {
		base := path.Base(n)
		isNotes := base == "NOTES.txt"
		if strings.HasPrefix(base, "_") || isNotes != *notes {
			continue
		}
		top := map[string]interface{}{
			"Values": values,
			"Chart":  meta,
			"Release": release{Name: *name, Namespace: *ns, Service: "Helm",
				IsInstall: !*upgrade, IsUpgrade: *upgrade, Revision: map[bool]int{false: 1, true: 2}[*upgrade]},
			"Capabilities": caps,
			"Files":        chartFiles,
			"Template":     map[string]interface{}{"Name": n, "BasePath": path.Join(meta.Name, "templates")},
		}
		var buf bytes.Buffer
		if err := r.tpl.ExecuteTemplate(&buf, n, top); err != nil {
			return fmt.Errorf("render error: %w", err)
		}
		text := strings.ReplaceAll(buf.String(), "<no value>", "")
		if strings.TrimSpace(text) == "" {
			continue
		}
		if *notes {
			fmt.Fprint(stdout, text)
		} else {
			fmt.Fprintf(stdout, "---\n# Source: %s\n%s\n", n, strings.TrimRight(text, "\n"))
		}
	}
	return nil
}

func yaml2json(args []string, stdout io.Writer) error {
	docs := []interface{}{}
	for _, f := range args {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		dec := yaml3.NewDecoder(bytes.NewReader(data))
		for i := 0; ; i++ {
			var v interface{}
			err := dec.Decode(&v)
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("%s: document %d: %w", f, i, err)
			}
			if v == nil {
				continue
			}
			docs = append(docs, v)
		}
	}
	j, err := json.MarshalIndent(docs, "", " ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, string(j))
	return err
}

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == "yaml2json" {
		err = yaml2json(os.Args[2:], os.Stdout)
	} else {
		err = render(os.Args[1:], os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helmrender:", err)
		os.Exit(1)
	}
}
