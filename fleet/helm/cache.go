package helm

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"helm.sh/helm/v4/pkg/chart/common"
)

// renderKey identifies a render: the same key gives the same objects. It covers the chart
// (the identity of everything loaded for it), the user's values, the release, the
// capabilities and the flags.
func renderKey(chart string, values map[string]any, releaseName, namespace string, caps *common.Capabilities, flags renderFlags) (string, error) {
	// encoding/json sorts map keys, so equal values encode equally.
	v, err := json.Marshal(values)
	if err != nil {
		return "", fmt.Errorf("values: %w", err)
	}
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field([]byte(chart))
	field(v)
	field([]byte(releaseName))
	field([]byte(namespace))
	field([]byte(caps.KubeVersion.Version))
	field([]byte(strconv.Itoa(len(caps.APIVersions))))
	for _, gv := range caps.APIVersions {
		field([]byte(gv))
	}
	field(fmt.Appendf(nil, "%t %t %t", flags.includeCRDs, flags.skipTests, flags.skipSchemaValidation))
	return hex.EncodeToString(h.Sum(nil)), nil
}
