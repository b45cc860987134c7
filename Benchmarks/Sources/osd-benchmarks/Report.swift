import Foundation

/// One line of the final comparison: a measurement of each side and their ratio.
struct ComparisonRow {
    let operation: String
    let grdb: String
    let openSwiftData: String
    /// OpenSwiftData's measurement divided by GRDB's.
    let ratio: Double

    static let targetRatio = 2.0

    /// Whether the row has the target ratio (rows without one are measured, not judged).
    var isJudged = true
    /// The largest ratio that passes.
    var target = Self.targetRatio

    var passes: Bool { !isJudged || ratio <= target }

    init(_ operation: String, grdb: Duration, openSwiftData: Duration, judged: Bool = true, target: Double = Self.targetRatio) {
        self.isJudged = judged
        self.target = target
        self.operation = operation
        self.grdb = grdb.formatted
        self.openSwiftData = openSwiftData.formatted
        self.ratio = openSwiftData.milliseconds / max(grdb.milliseconds, .leastNonzeroMagnitude)
    }

    init(_ operation: String, grdbKB: Int, openSwiftDataKB: Int) {
        self.operation = operation
        self.grdb = "\(grouped(grdbKB)) KB"
        self.openSwiftData = "\(grouped(openSwiftDataKB)) KB"
        self.ratio = Double(openSwiftDataKB) / Double(max(grdbKB, 1))
    }
}

/// Prints the comparison as a markdown table, with the target and a verdict per row.
func printTable(_ rows: [ComparisonRow]) {
    print("| operation | GRDB | OpenSwiftData | ratio (OSD / GRDB) | target |")
    print("|---|---:|---:|---:|:---:|")
    for row in rows {
        let verdict = row.isJudged ? "≤ \(String(format: "%.1f", row.target)) \(row.passes ? "PASS" : "FAIL")" : "—"
        print("| \(row.operation) | \(row.grdb) | \(row.openSwiftData) | \(String(format: "%.2f", row.ratio)) | \(verdict) |")
    }
    let judged = rows.filter(\.isJudged)
    let passing = judged.filter(\.passes).count
    print("")
    print("Targets: \(passing == judged.count ? "PASS" : "FAIL") (\(passing) of \(judged.count) judged rows pass)")
}

/// `1234567` → `1,234,567`.
func grouped(_ value: Int) -> String {
    let digits = String(value.magnitude)
    var result = ""
    for (offset, character) in digits.enumerated() {
        if offset > 0 && (digits.count - offset) % 3 == 0 { result.append(",") }
        result.append(character)
    }
    return value < 0 ? "-" + result : result
}
