package argocd

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// LabelSecretType marks Argo CD's declarative Secrets: `cluster` for clusters, `repository`
// and `repo-creds` for repository credentials.
const LabelSecretType = "argocd.argoproj.io/secret-type"

// Values of LabelSecretType.
const (
	SecretTypeCluster    = "cluster"
	SecretTypeRepository = "repository"
	SecretTypeRepoCreds  = "repo-creds"
)

// argoSecretType is the LabelSecretType of obj when it is a v1 Secret, or "".
func argoSecretType(obj map[string]any) string {
	if obj["apiVersion"] != "v1" || obj["kind"] != "Secret" {
		return ""
	}
	meta, _ := obj["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	t, _ := labels[LabelSecretType].(string)
	return t
}

// findings collects what converting one document reports: warnings, and the errors that stop
// it from being converted.
type findings struct {
	warnings []Warning
	errs     ConvertErrors
}

func (f *findings) warn(field, format string, args ...any) {
	f.warnings = append(f.warnings, Warning{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (f *findings) fail(field, format string, args ...any) {
	f.errs = append(f.errs, &FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// err returns the errors sorted by field, or nil when there are none.
func (f *findings) err() error {
	if len(f.errs) == 0 {
		return nil
	}
	sort.Slice(f.errs, func(i, j int) bool { return f.errs[i].Field < f.errs[j].Field })
	return f.errs
}

// decodeSecret decodes a Secret given as a decoded YAML/JSON object; data is base64-decoded.
func decodeSecret(obj map[string]any) (*corev1.Secret, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var s corev1.Secret
	if err := json.Unmarshal(raw, &s); err != nil {
		// encoding/json names the field and the offset, never the value.
		return nil, fmt.Errorf("decode Secret: %w", err)
	}
	return &s, nil
}

// secretValue is one key of a Secret and the field it was read from, for messages. Messages
// name the field, never the value.
type secretValue struct {
	field string
	value string
}

// secretValues merges data and stringData as the API server does (stringData wins).
func secretValues(s *corev1.Secret) map[string]secretValue {
	out := map[string]secretValue{}
	for k, v := range s.Data {
		out[k] = secretValue{field: "data." + k, value: string(v)}
	}
	for k, v := range s.StringData {
		out[k] = secretValue{field: "stringData." + k, value: v}
	}
	return out
}

// userLabels are the labels of an Argo CD Secret other than its type label.
func userLabels(in *corev1.Secret) map[string]string {
	out := map[string]string{}
	for k, v := range in.Labels {
		if k != LabelSecretType {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// userAnnotations keeps the user's annotations and drops, with a warning, those Argo CD wrote.
func (f *findings) userAnnotations(annotations map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range sortedKeys(annotations) {
		switch {
		case k == "managed-by" || strings.HasPrefix(k, "argocd.argoproj.io/"):
			f.warn("metadata.annotations."+k, "dropped: Argo CD bookkeeping")
		case k == corev1.LastAppliedConfigAnnotation:
		default:
			out[k] = annotations[k]
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
