package health

import (
	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// severity ranks a code from best (0) to worst. A code this package does not know ranks as
// Unknown, so that a typo or a newer code never passes for healthy.
func severity(code navarchv1.HealthStatusCode) int {
	switch code {
	case navarchv1.HealthHealthy:
		return 0
	case navarchv1.HealthSuspended:
		return 1
	case navarchv1.HealthProgressing:
		return 2
	case navarchv1.HealthMissing:
		return 3
	case navarchv1.HealthDegraded:
		return 4
	default:
		return 5
	}
}

// Worse reports whether a is worse than b in the order Healthy, Suspended, Progressing, Missing,
// Degraded, Unknown. A code outside that list counts as Unknown.
func Worse(a, b navarchv1.HealthStatusCode) bool {
	return severity(a) > severity(b)
}

// Worst returns the worst of codes, Healthy when there are none. A code outside the known list
// counts as, and is returned as, Unknown.
func Worst(codes ...navarchv1.HealthStatusCode) navarchv1.HealthStatusCode {
	worst := navarchv1.HealthHealthy
	for _, code := range codes {
		if Worse(code, worst) {
			worst = code
		}
	}
	if severity(worst) == severity(navarchv1.HealthUnknown) {
		return navarchv1.HealthUnknown
	}
	return worst
}
