// Package registrytest holds the mechanics shared by the tests of pkg/registry's
// resources, so that each resource's test keeps only its own data: sample objects,
// mutations, expected field paths and columns. It is imported by tests only.
package registrytest
