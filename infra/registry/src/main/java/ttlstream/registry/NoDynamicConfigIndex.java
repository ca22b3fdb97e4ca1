package ttlstream.registry;

import java.util.List;

import javax.enterprise.inject.Produces;
import javax.inject.Singleton;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;

/**
 * Stands in for Apicurio's config-index extension, which infra/registry/pom.xml leaves out: that extension's build
 * step indexes the registry's dynamic settings and produces this bean. The local stack changes no setting at run
 * time, so the list is empty (the registry's defaults apply; its admin config API lists nothing).
 */
@Singleton
public class NoDynamicConfigIndex {
    @Produces
    @Singleton
    DynamicConfigPropertyList dynamicConfigPropertyList() {
        return new DynamicConfigPropertyList(List.of());
    }
}
