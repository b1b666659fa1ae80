package notify

import (
	"strings"
	"testing"
)

func TestParseNamesTheFieldOfEachError(t *testing.T) {
	secret := map[string][]byte{"hook-url": []byte("https://hooks.example.com/x\n"), "hmac": []byte("k3y"), "empty": nil}
	for _, tc := range []struct {
		name, config string
		want         []string
	}{
		{"unknown field", "destinations:\n- name: a\n  webhok: {url: https://x}\n", []string{`config.yaml: `, `unknown field "webhok"`}},
		{"no kind", "destinations:\n- name: a\n", []string{"destinations[0]: set exactly one of webhook, slack and events"}},
		{"two kinds", "destinations:\n- name: a\n  events: {}\n  slack: {url: https://x}\n", []string{"destinations[0]: set exactly one"}},
		{"bad name", "destinations:\n- name: A_b\n  events: {}\n", []string{`destinations[0].name: "A_b" is not a valid name`}},
		{"duplicate name", "destinations:\n- name: a\n  events: {}\n- name: a\n  events: {}\n", []string{`destinations[1].name: duplicate destination "a"`}},
		{"no url", "destinations:\n- name: a\n  webhook: {}\n", []string{"destinations[0].webhook.url: required (or urlSecretKey)"}},
		{"both urls", "destinations:\n- name: a\n  slack: {url: https://x, urlSecretKey: hook-url}\n", []string{"destinations[0].slack.url: set url or urlSecretKey, not both"}},
		{"not http", "destinations:\n- name: a\n  webhook: {url: 'ftp://x/y'}\n", []string{"destinations[0].webhook.url: not an http(s) URL"}},
		{"missing secret key", "destinations:\n- name: a\n  slack: {urlSecretKey: nope}\n", []string{`destinations[0].slack.urlSecretKey: Secret navarch-notifications has no key "nope"`}},
		{"empty hmac", "destinations:\n- name: a\n  webhook: {urlSecretKey: hook-url, hmacSecretKey: empty}\n", []string{`destinations[0].webhook.hmacSecretKey: Secret navarch-notifications key "empty" is empty`}},
		{"reserved header", "destinations:\n- name: a\n  webhook: {url: 'https://x', headers: {X-Navarch-Signature: v}}\n", []string{"destinations[0].webhook.headers[X-Navarch-Signature]: not a header navarch may set"}},
		{"unknown trigger", "subscriptions:\n- name: s\n  triggers: [OutOfSync, Broken]\n  destinations: [a]\ndestinations:\n- name: a\n  events: {}\n",
			[]string{`subscriptions[0].triggers[1]: unknown trigger "Broken"`}},
		{"unknown destination", "subscriptions:\n- name: s\n  triggers: [Degraded]\n  destinations: [nope]\n", []string{`subscriptions[0].destinations[0]: no destination is named "nope"`}},
		{"no triggers, no name", "subscriptions:\n- destinations: []\n", []string{"subscriptions[0].name: required", "subscriptions[0].triggers: required", "subscriptions[0].destinations: required"}},
		{"bad selector", "destinations:\n- name: a\n  events: {}\nsubscriptions:\n- name: s\n  triggers: [Degraded]\n  destinations: [a]\n  selector: {labels: 'env in prod'}\n",
			[]string{"subscriptions[0].selector.labels: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(map[string]string{ConfigKey: tc.config}, secret)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "hooks.example.com") || strings.Contains(err.Error(), "k3y") {
				t.Errorf("error %q repeats a secret value", err)
			}
		})
	}
}

func TestParseResolvesSecretReferences(t *testing.T) {
	cfg, err := Parse(map[string]string{ConfigKey: `
destinations:
- name: ops
  webhook: {urlSecretKey: hook-url, hmacSecretKey: hmac, headers: {X-Team: shop}}
- name: chat
  slack: {url: 'https://chat.example.com/hook'}
- name: events
  events: {}
subscriptions:
- name: prod
  triggers: [OutOfSync, SyncFailed]
  destinations: [ops, chat, events]
  selector: {labels: 'env=prod', projects: [shop], applicationSets: [apps]}
`}, map[string][]byte{"hook-url": []byte("https://hooks.example.com/x\n"), "hmac": []byte("k3y")})
	if err != nil {
		t.Fatal(err)
	}
	ops := cfg.Destinations["ops"]
	if ops.Kind != KindWebhook || ops.URL != "https://hooks.example.com/x" || string(ops.HMACKey) != "k3y" || ops.Headers["X-Team"] != "shop" {
		t.Errorf("ops = %+v", ops)
	}
	if c := cfg.Destinations["chat"]; c.Kind != KindSlack || c.URL != "https://chat.example.com/hook" {
		t.Errorf("chat = %+v", c)
	}
	if e := cfg.Destinations["events"]; e.Kind != KindEvents {
		t.Errorf("events = %+v", e)
	}
	if len(cfg.Subscriptions) != 1 || cfg.Subscriptions[0].Selector.Labels.String() != "env=prod" {
		t.Errorf("subscriptions = %+v", cfg.Subscriptions)
	}
}

func TestParseWithoutConfigSendsNothing(t *testing.T) {
	for _, data := range []map[string]string{nil, {}, {ConfigKey: "  \n"}} {
		cfg, err := Parse(data, nil)
		if err != nil || len(cfg.Destinations) != 0 || len(cfg.Subscriptions) != 0 {
			t.Errorf("Parse(%v) = %+v, %v; want an empty configuration", data, cfg, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("destinations:\n- name: a\n  webhook: {url: 'https://x', hmacSecretKey: k}\nsubscriptions:\n- name: s\n  triggers: [Degraded]\n  destinations: [a]\n")
	f.Fuzz(func(t *testing.T, config string) {
		cfg, err := Parse(map[string]string{ConfigKey: config}, map[string][]byte{"k": []byte("v")})
		if err == nil && cfg == nil {
			t.Fatal("nil configuration without an error")
		}
	})
}
