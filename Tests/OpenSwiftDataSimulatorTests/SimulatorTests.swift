import OpenSwiftDataSimulator
import Testing

@Suite("Deterministic sync simulator")
struct SimulatorTests {
    @Test("a seed's schedule passes")
    func oneSeed() async {
        let result = await Simulation().run(seed: 1)
        #expect(result.failures == [])
    }
}
