import Foundation

extension EntityLayout {
    /// The `ORDER BY` terms for sort descriptors, or nil when one of them names something that
    /// is not a stored column (the fetch then sorts in memory, with the descriptors themselves).
    func orderTerms<T>(for sortBy: [SortDescriptor<T>]) -> [OrderTerm]? {
        var terms: [OrderTerm] = []
        for descriptor in sortBy {
            guard let keyPath = descriptor.keyPath,
                  let index = propertyIndex(of: keyPath),
                  properties[index].columnIndex != nil,
                  properties[index].codec.sortsLikeSwift
            else { return nil }
            terms.append(OrderTerm(column: properties[index].name, ascending: descriptor.order == .forward))
        }
        return terms
    }
}
