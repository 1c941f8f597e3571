// Package svcopts stands in for providers/internal/svcopts, which the
// Go internal-package rule keeps out of reach of hack/: the generator
// matches the package name and the type name, not the import path.
package svcopts

// Annotation is a Service annotation name.
type Annotation string
