package generators

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"time"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// DefaultPluginRequeueAfter is how often a plugin generator asks its plugin again when
// requeueAfterSeconds is not set (Argo CD's default).
const DefaultPluginRequeueAfter = 30 * time.Minute

// PluginCaller asks generator plugins for parameter sets. The controller implements it over
// HTTP (internal/plugin); `navarch generate` has none, so plugin generators run only in the
// controller.
type PluginCaller interface {
	// CallPlugin sends call.Parameters to the plugin that the ConfigMap call.ConfigMap
	// configures and returns the parameter sets it answered, in its order. A plugin that
	// cannot be reached, refuses, or answers anything but a list of objects is an error, never
	// an empty list.
	CallPlugin(ctx context.Context, call PluginCall) ([]map[string]any, error)
}

// PluginCall is one request of a plugin generator to its plugin.
type PluginCall struct {
	// ConfigMap names the ConfigMap that configures the plugin (configMapRef.name).
	ConfigMap string
	// ApplicationSet names the ApplicationSet the parameters are for.
	ApplicationSet string
	// Parameters are the generator's input.parameters, decoded, numbers as json.Number so
	// that they reach the plugin as written.
	Parameters map[string]any
}

// ErrNoPluginCaller is returned by a plugin generator run without Inputs.Plugins.
var ErrNoPluginCaller = errors.New("plugin generators run only in the controller (no plugin caller configured)")

// Plugin is the plugin generator: one parameter set per object its plugin answers. Each
// object's keys become parameters (flattened to dotted keys in fasttemplate mode, as a list
// element's); then, as in Argo CD, "generator.input.parameters" holds the generator's
// input.parameters and "values.<k>" its templated values, both replacing what the plugin may
// have answered under those names.
type Plugin struct {
	// Spec is the generator's spec.
	Spec *navarchv1.PluginGenerator
	// Field is the spec's path, e.g. "spec.generators[0].plugin".
	Field string
}

func (g Plugin) validate() error {
	if g.Spec.ConfigMapRef.Name == "" {
		return fmt.Errorf("%s.configMapRef.name: must be set", g.Field)
	}
	if s := g.Spec.RequeueAfterSeconds; s != nil && *s < 1 {
		return fmt.Errorf("%s.requeueAfterSeconds: must be at least 1, not %d", g.Field, *s)
	}
	_, err := g.input(true)
	return err
}

// RequeueAfter implements Generator.
func (g Plugin) RequeueAfter() time.Duration {
	if s := g.Spec.RequeueAfterSeconds; s != nil && *s > 0 {
		return time.Duration(*s) * time.Second
	}
	return DefaultPluginRequeueAfter
}

// input decodes input.parameters: with numbers as json.Number for the request, or as float64
// for templates, as the other generators decode JSON.
func (g Plugin) input(numbers bool) (map[string]any, error) {
	out := make(map[string]any, len(g.Spec.Input.Parameters))
	keys := make([]string, 0, len(g.Spec.Input.Parameters))
	for k := range g.Spec.Input.Parameters {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first bad parameter reported is always the same one
	for _, k := range keys {
		dec := json.NewDecoder(bytes.NewReader(g.Spec.Input.Parameters[k].Raw))
		if numbers {
			dec.UseNumber()
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s.input.parameters[%s]: %w", g.Field, k, err)
		}
		out[k] = v
	}
	return out, nil
}

// Params implements Generator.
func (g Plugin) Params(ctx context.Context, in Inputs) ([]map[string]any, error) {
	if err := g.validate(); err != nil {
		return nil, err
	}
	if in.Plugins == nil {
		return nil, fmt.Errorf("%s: %w", g.Field, ErrNoPluginCaller)
	}
	request, _ := g.input(true)
	sets, err := in.Plugins.CallPlugin(ctx, PluginCall{
		ConfigMap: g.Spec.ConfigMapRef.Name, ApplicationSet: in.ApplicationSetName, Parameters: request,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", g.Field, err)
	}
	input, _ := g.input(false)
	out := make([]map[string]any, 0, len(sets))
	for i, set := range sets {
		if set == nil {
			return nil, fmt.Errorf("%s: the plugin's parameter set %d is not an object", g.Field, i)
		}
		obj := maps.Clone(set) // the caller's maps stay as they were
		obj["generator"] = map[string]any{"input": map[string]any{"parameters": input}}
		if len(g.Spec.Values) > 0 {
			delete(obj, "values")
		}
		params := shapeObject(obj, in.GoTemplate)
		if err := appendValues(in, g.Field, fmt.Sprintf("parameter set %d", i), g.Spec.Values, params); err != nil {
			return nil, err
		}
		out = append(out, params)
	}
	return out, nil
}
