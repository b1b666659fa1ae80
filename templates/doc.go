// Package templates renders one generator parameter set into an Application, with the same
// results as Argo CD's ApplicationSet controller so that existing ApplicationSets port unchanged.
//
// There are two modes, chosen by the ApplicationSet's goTemplate field:
//
//   - fasttemplate (the default): parameters are a flat map whose keys may contain dots and
//     brackets ("name", "path.basename", "path[0]", "metadata.labels.env"). Every `{{ key }}` in
//     every string of the template (metadata, map keys, and every string of the spec) is replaced
//     by the parameter's value; whitespace inside the braces is ignored and an unknown key is left
//     exactly as written. As in Argo CD, a string is only processed when one of its lines holds a
//     "{{" followed by a "}}", and a "{{" without a closing "}}" in such a string is an error.
//   - goTemplate: parameters are a nested map (`.path.basename`, `.metadata.labels.env`) and each
//     string is a Go text/template with sprig's functions, minus env, expandenv and getHostByName
//     (templates cannot read the environment or the network), plus normalize, slugify, toYaml,
//     fromYaml and fromYamlArray. goTemplateOptions such as "missingkey=error" apply; by default a
//     missing key renders as "<no value>".
//
// templatePatch is a templated YAML document, rendered as a whole with the same parameters and
// mode, and merged onto the rendered Application with a strategic merge (maps merge, lists of the
// Application spec replace). It is the way to produce booleans, numbers, lists and maps, which
// string substitution cannot.
//
// Use Compile once per ApplicationSet (or per generator, after Merge has applied the generator's
// template override) and Template.Render once per parameter set: every string is parsed once, so
// rendering does no parsing. Engine renders single strings (generators use it for elementsYaml,
// values and the fields of a matrix's later children) and caches what it parses.
//
// Errors are *FieldError values naming the field, such as spec.template.spec.source.path;
// WithParamSet adds which parameter set of which generator failed. Merge applies a generator's
// template override before Compile.
//
// Rendering is bounded, since templates come from tenants and run in the controller: every
// rendered string (MaxFieldSize), Application (MaxApplicationSize), value a function makes
// (MaxValueSize) and loop (MaxSteps) is capped, and a Budget in Options bounds the time and
// bytes of a whole pass. Crossing a limit is a *LimitError inside the *FieldError of the field.
// limits.go lists the limits, output.go and instrument.go stop a running template, and
// sprig.go bounds the template functions.
//
// The package is pure: no Kubernetes client, no logging, no environment. Its only package state
// is the function map, built once and never modified, and a pool of scratch buffers.
package templates
