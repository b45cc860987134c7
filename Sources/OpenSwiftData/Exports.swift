// Models conform to `Observable`, and their generated code uses `ObservationRegistrar`, so code
// that imports OpenSwiftData sees Observation as it would with SwiftData.
@_exported import Observation
