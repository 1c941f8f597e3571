// Package hack holds the project's development scripts and generators;
// its tests check the scripts themselves.
package hack
