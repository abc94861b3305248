import Foundation
import Items

/// Distances on the Earth, taken as a sphere.
///
/// One definition for every language that measures distance (CloudKit's
/// `distanceToLocation:fromLocation:`, Algolia's `aroundRadius` and
/// `_geoDistance`) and for the store that filters by it, so a radius means
/// the same wherever it is written.
public enum Geo {
    /// The mean Earth radius (IUGG), in metres. A sphere is off by up to about
    /// 0.5 % from the ellipsoid; search radii do not need better.
    public static let earthRadius = 6_371_008.8

    /// Degrees of latitude per metre along a meridian.
    public static let degreesPerMetre = 180 / (Double.pi * earthRadius)
}

extension Location {
    /// The great-circle distance in metres to `other`, by the haversine
    /// formula on a sphere of radius ``Geo/earthRadius`` (6,371,008.8 m).
    /// Symmetric, 0 for the same point, at most half the circumference.
    public func distance(from other: Location) -> Double {
        let toRadians = Double.pi / 180
        let phi1 = latitude * toRadians, phi2 = other.latitude * toRadians
        let dPhi = (other.latitude - latitude) * toRadians
        let dLambda = (other.longitude - longitude) * toRadians
        let a = sin(dPhi / 2) * sin(dPhi / 2) + cos(phi1) * cos(phi2) * sin(dLambda / 2) * sin(dLambda / 2)
        // min: rounding can push `a` a hair past 1 for antipodal points.
        return 2 * Geo.earthRadius * asin(min(1, a.squareRoot()))
    }
}

/// A geographic area: a circle around a point or a latitude/longitude box.
public enum GeoArea: Sendable, Hashable {
    /// Within `radius` metres of `center`, boundary included, by great-circle
    /// distance (``Location/distance(from:)``).
    case circle(center: Location, radius: Double)
    /// Algolia's `insideBoundingBox`: the rectangle with two diagonally opposite
    /// corners (lat1, lng1) and (lat2, lng2), edges included. The corners may
    /// come in either order; the box spans the longitudes between the two
    /// values, so it never crosses the 180th meridian (Algolia warns to take
    /// care there; a box across it is written as two boxes, one each side).
    case box(lat1: Double, lng1: Double, lat2: Double, lng2: Double)

    public func contains(_ point: Location) -> Bool {
        switch self {
        case .circle(let center, let radius):
            return point.distance(from: center) <= radius
        case .box(let lat1, let lng1, let lat2, let lng2):
            return (min(lat1, lat2)...max(lat1, lat2)).contains(point.latitude)
                && (min(lng1, lng2)...max(lng1, lng2)).contains(point.longitude)
        }
    }

    /// The latitudes any point of the area lies between, for an index
    /// prefilter: a circle's reaches `radius` metres north and south of its
    /// centre (a great circle never strays further from the centre's latitude),
    /// widened by a small margin against rounding.
    public var latitudeBounds: ClosedRange<Double> {
        switch self {
        case .circle(let center, let radius):
            let reach = max(0, radius) * Geo.degreesPerMetre * (1 + 1e-9) + 1e-9
            return max(-90, center.latitude - reach)...min(90, center.latitude + reach)
        case .box(let lat1, _, let lat2, _):
            return min(lat1, lat2)...max(lat1, lat2)
        }
    }
}

/// A geographic test: one of the attribute's locations lies in `area`.
public struct GeoTest: Sendable, Hashable {
    /// A location attribute; `location` (Core Spotlight's, also made from
    /// `latitude` and `longitude`) unless said otherwise.
    public var attribute: String
    public var area: GeoArea

    public static let defaultAttribute = "location"

    public init(attribute: String = GeoTest.defaultAttribute, area: GeoArea) {
        self.attribute = attribute
        self.area = area
    }

    /// Whether any of `locations` is inside the area.
    public func matches(_ locations: some Sequence<Location>) -> Bool {
        locations.contains { area.contains($0) }
    }
}
