package membership

import (
	"hash/fnv"
)

// Owner returns the member that owns cluster among members, by rendezvous (highest random
// weight) hashing: every member scores the cluster with a hash of member+"/"+cluster and the
// highest score wins, ties going to the smaller name. Adding a member therefore moves only
// the clusters it now wins, about 1/N of them, and removing one moves only the clusters it
// owned; all other assignments stay put. The result does not depend on the order of members.
// Owner returns "" when members is empty.
func Owner(cluster string, members []string) string {
	var owner string
	var best uint64
	for _, m := range members {
		w := weight(m, cluster)
		if owner == "" || w > best || (w == best && m < owner) {
			owner, best = m, w
		}
	}
	return owner
}

// weight is member's score for cluster: FNV-1a over member+"/"+cluster, then a 64-bit
// finalizer (MurmurHash3's fmix64). FNV-1a alone barely mixes the last bytes into the high
// bits, and cluster names often differ only at their end (cluster-001, cluster-002, …); the
// finalizer spreads every input bit over the whole word so the scores are evenly distributed.
func weight(member, cluster string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(member))
	_, _ = h.Write([]byte{'/'})
	_, _ = h.Write([]byte(cluster))
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}
