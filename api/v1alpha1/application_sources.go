package v1alpha1

// GetSources returns the Application's sources: spec.sources, or spec.source alone.
func (s *ApplicationSpec) GetSources() []ApplicationSource {
	if len(s.Sources) > 0 {
		return s.Sources
	}
	return []ApplicationSource{s.Source}
}

// HasMultipleSources reports whether the Application uses spec.sources.
func (s *ApplicationSpec) HasMultipleSources() bool { return len(s.Sources) > 0 }

// GetSources returns the sources a sync operation syncs when it names them (a rollback to a
// history entry), or nil for the Application's own.
func (o *SyncOperation) GetSources() []ApplicationSource {
	switch {
	case o == nil:
		return nil
	case len(o.Sources) > 0:
		return o.Sources
	case o.Source != nil:
		return []ApplicationSource{*o.Source}
	}
	return nil
}

// GetSources returns the sources of a history entry.
func (h *RevisionHistory) GetSources() []ApplicationSource {
	if len(h.Sources) > 0 {
		return h.Sources
	}
	return []ApplicationSource{h.Source}
}
